"""Node reads on real PostgreSQL, where concurrent ones share a statement, and on MariaDB,
where each is its own: each sees every write committed before it was asked, a batch
reads each node once (PostgreSQL), and a dropped connection is reconnected without the
caller seeing it."""

import threading
import uuid

import pytest
from sqlalchemy.engine import make_url

from inspector import errors
from inspector.store import dialects
from tests import seed
from tests.conftest import end_connections

READERS = 6
WRITES = 300


@pytest.fixture
def store(server_store):
    """A Store on PostgreSQL, then on MariaDB."""
    return server_store


def new_node(store):
    node_uuid = str(uuid.uuid4())
    seed.node(store, node_uuid, "starting")
    return node_uuid


def test_concurrent_reads_see_every_write_committed_before_them(store):
    watched, other = new_node(store), new_node(store)
    committed = {"version": store.get_node(watched).version}
    done = threading.Event()
    stale: list[tuple[int, int]] = []
    failures: list[BaseException] = []

    def write():
        try:
            for index in range(WRITES):
                moved = seed.move(store, watched, ("waiting", "starting")[index % 2])
                committed["version"] = moved.version  # after its commit
        except BaseException as error:
            failures.append(error)
        finally:
            done.set()

    def read():
        try:
            while not done.is_set():
                before = committed["version"]
                seen = store.get_node(watched).version
                if seen < before:
                    stale.append((seen, before))
                store.get_node(other)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write)]
    threads += [threading.Thread(target=read) for _ in range(READERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    assert stale == [], "a read answered a version older than one committed before it"
    assert store.get_node(watched).version == committed["version"]
    if store.engine.dialect.name == "postgresql":
        # The readers overlapped: some statements answered several reads.
        reads = store._dialect._node_reads
        assert reads.statements < reads.reads
    else:  # no array parameter: each read is its own statement
        assert not isinstance(store._dialect, dialects.Postgresql)


@pytest.mark.postgresql
@pytest.mark.integration
def test_a_batch_reads_each_node_once_and_skips_absent_ones(postgresql_store):
    store = postgresql_store
    uuids = [new_node(store) for _ in range(3)]
    absent = str(uuid.uuid4())
    rows = store._dialect._read_nodes_by_uuid([*uuids, absent])
    assert sorted(rows) == sorted(uuids)
    assert all(rows[key]["state"] == "starting" for key in uuids)
    with pytest.raises(errors.NotFound):
        store.get_node(absent)


def test_a_dropped_connection_is_reconnected_for_a_read(store, server_admin):
    uuids = [new_node(store) for _ in range(2)]
    store.get_node(uuids[0])  # a pooled connection exists
    database = make_url(str(store.engine.url)).database
    assert end_connections(server_admin, database) >= 1
    assert store.get_node(uuids[0]).uuid == uuids[0]
    assert end_connections(server_admin, database) >= 1
    if isinstance(store._dialect, dialects.Postgresql):  # a coalesced read of both
        assert sorted(store._dialect._read_nodes_by_uuid(uuids)) == sorted(uuids)
    else:
        assert store.lookup_nodes({"mac": ["aa:bb:cc:dd:ee:01"]}) == {}
        assert store.get_node(uuids[1]).uuid == uuids[1]
