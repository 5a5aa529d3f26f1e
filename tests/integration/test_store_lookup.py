"""The ramdisk lookup and the replacement of a node's attributes on real PostgreSQL, where
each is one prepared statement with array parameters: the same answers as the portable
Core queries (which SQLite and MySQL run), a replacement that keeps, drops and adds."""

import uuid

import pytest

from inspector.store import lookup


@pytest.fixture
def store(postgresql_store):
    return postgresql_store


def new_node(store, state="waiting"):
    node_uuid = str(uuid.uuid4())
    store.create_node(node_uuid, state)
    return node_uuid


def portable_candidates(store, wanted):
    with store.engine.connect() as connection:
        return lookup.candidates(connection, wanted)


def test_the_statements_are_the_prepared_ones(store):
    # Otherwise the tests below would compare the portable queries with themselves.
    assert store._candidates is not None
    assert store._replace_attributes is not None


def test_lookup_counts_matches_per_node_as_the_portable_query(store):
    first, second, third = new_node(store), new_node(store, "finished"), new_node(store)
    store.set_attributes(first, {"mac": ["aa:bb:cc:dd:ee:01"], "bmc_address": ["10.0.0.1"]})
    store.set_attributes(second, {"mac": ["aa:bb:cc:dd:ee:02", "aa:bb:cc:dd:ee:03"]})
    store.set_attributes(third, {"mac": ["aa:bb:cc:dd:ee:09"]})
    wanted = {
        # Case and repeats do not count twice.
        "mac": ["AA:BB:CC:DD:EE:01", "aa:bb:cc:dd:ee:02", "aa:bb:cc:dd:ee:03", "aa:bb:cc:dd:ee:02"],
        "bmc_address": ["10.0.0.1", ""],
    }
    found = store.lookup_nodes(wanted)
    assert found == {first: (2, store.get_node(first)), second: (2, store.get_node(second))}
    assert found == portable_candidates(store, wanted)


def test_a_value_under_another_name_does_not_match(store):
    node = new_node(store)
    store.set_attributes(node, {"bmc_address": ["10.0.0.1"]})
    assert store.lookup_nodes({"mac": ["10.0.0.1"]}) == {}
    assert store.lookup_nodes({"mac": [], "bmc_address": []}) == {}


def test_replacing_keeps_drops_and_adds(store):
    node, other = new_node(store), new_node(store)
    store.set_attributes(other, {"mac": ["aa:bb:cc:dd:ee:01"]})
    store.set_attributes(node, {"mac": ["aa:bb:cc:dd:ee:01", "AA:BB:CC:DD:EE:02"]})
    assert store.attributes(node) == {"mac": ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"]}
    store.set_attributes(
        node, {"mac": ["aa:bb:cc:dd:ee:02", "aa:bb:cc:dd:ee:03"], "bmc_address": ["10.0.0.7"]}
    )
    assert store.attributes(node) == {
        "bmc_address": ["10.0.0.7"],
        "mac": ["aa:bb:cc:dd:ee:02", "aa:bb:cc:dd:ee:03"],
    }
    # Another node's rows, even for the same MAC, are not touched.
    assert store.attributes(other) == {"mac": ["aa:bb:cc:dd:ee:01"]}
    store.set_attributes(node, {"mac": [], "bmc_address": []})
    assert store.attributes(node) == {}
    assert store.attributes(other) == {"mac": ["aa:bb:cc:dd:ee:01"]}


def test_replacing_the_same_attributes_again_changes_nothing(store):
    node = new_node(store)
    wanted = {"mac": ["aa:bb:cc:dd:ee:01"], "bmc_address": ["10.0.0.1"]}
    store.set_attributes(node, wanted)
    store.set_attributes(node, wanted)
    assert store.attributes(node) == wanted | {"mac": ["aa:bb:cc:dd:ee:01"]}
    assert store.lookup_nodes(wanted) == {node: (2, store.get_node(node))}


def test_the_lookup_reads_the_primary_key_index_on_a_large_site(store):
    node = new_node(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO attributes (name, value, node_uuid) "
            "SELECT 'mac', md5(i::text), %(node)s FROM generate_series(1, 20000) AS i",
            {"node": node},
        )
        connection.exec_driver_sql("ANALYZE attributes")
    with store.engine.connect() as connection:
        plan = connection.exec_driver_sql(
            "EXPLAIN " + str(lookup.CANDIDATES.compile(dialect=store.engine.dialect)),
            {"names": ["mac"], "values": ["aa:bb:cc:dd:ee:01"]},
        ).all()
    text = "\n".join(row[0] for row in plan)
    assert "Index" in text and "attributes" in text, text
    assert "Seq Scan on attributes" not in text, text
