"""The ramdisk lookup with its nodes in one query, and the one-statement data upsert."""

from datetime import datetime

import pytest

from inspector.store import Store, default_url, schema

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901)


@pytest.fixture
def store(tmp_path):
    url = default_url(tmp_path)
    schema.upgrade(url)
    store = Store.from_url(url, clock=lambda: T0)
    yield store
    store.close()


def test_lookup_nodes_counts_matches_and_reads_the_nodes(store):
    store.create_node(NODE, "waiting", started_at=T0)
    store.create_node(OTHER, "finished")
    store.set_attributes(NODE, {"mac": ["aa:bb:cc:dd:ee:01"], "bmc_address": ["10.0.0.1"]})
    store.set_attributes(OTHER, {"mac": ["aa:bb:cc:dd:ee:02"]})
    wanted = {"mac": ["AA:BB:CC:DD:EE:01", "aa:bb:cc:dd:ee:02"], "bmc_address": ["10.0.0.1"]}
    found = store.lookup_nodes(wanted)
    assert found == {NODE: (2, store.get_node(NODE)), OTHER: (1, store.get_node(OTHER))}
    assert {uuid: count for uuid, (count, _) in found.items()} == store.lookup(wanted)


def test_lookup_nodes_without_attributes_or_matches(store):
    assert store.lookup_nodes({"mac": [], "bmc_address": []}) == {}
    assert store.lookup_nodes({"mac": ["aa:bb:cc:dd:ee:01"]}) == {}


def test_store_data_inserts_then_replaces(store):
    store.create_node(NODE, "waiting")
    store.store_data(NODE, {"a": 1}, processed=False)
    store.store_data(NODE, {"b": 2}, processed=True)
    store.store_data(NODE, {"a": 3}, processed=False)
    assert store.get_data(NODE, processed=False) == {"a": 3}
    assert store.get_data(NODE, processed=True) == {"b": 2}
