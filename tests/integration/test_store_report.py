"""The fleet report's read on SQLite, PostgreSQL and MariaDB: every node's processed data
(not its raw data) streamed in several fetches, with the node's name from its snapshot,
while the service keeps writing."""

import uuid

import pytest

from inspector.store import Store, reports, schema
from tests import seed

pytestmark = pytest.mark.integration

#: More nodes than one fetch brings.
NODES = reports.BATCH + 50


@pytest.fixture
def store(database_url):
    schema.upgrade(database_url)
    db = Store.from_url(database_url)
    yield db
    db.close()


def test_every_processed_data_streamed_with_names_while_writes_go_on(store):
    expected = {}
    for index in range(NODES):
        node = str(uuid.uuid4())
        seed.node(store, node, "finished")
        store.store_data(node, {"index": index}, processed=True)
        store.store_data(node, {"raw": index}, processed=False)
        if index % 2:
            store.save_snapshot(node, {"uuid": node, "name": f"node-{index}"}, None)
        expected[node] = (f"node-{index}" if index % 2 else None, {"index": index})
    late = str(uuid.uuid4())
    seen = {}
    for count, (node, name, data) in enumerate(store.processed_data(names=True)):
        seen[node] = (name, data)
        if count == 10:  # mid-stream, the service writes: not blocked by the report
            seed.node(store, late, "finished")
            store.store_data(late, {"index": -1}, processed=True)
            assert store.get_data(late, processed=True) == {"index": -1}
    seen.pop(late, None)  # the stream may or may not see a row committed after it began
    assert seen == expected
    unnamed = {node: (name, data) for node, name, data in store.processed_data()}
    assert unnamed.pop(late) == (None, {"index": -1})
    assert unnamed == {node: (None, data) for node, (_, data) in expected.items()}
