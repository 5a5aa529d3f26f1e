"""The ramdisk lookup and the replacement of a node's attributes on real PostgreSQL, where
each is one prepared statement with array parameters, and on MariaDB, which runs the
portable Core queries (as SQLite does): the same answers, a replacement that keeps,
drops and adds, and a lookup that reads the primary key's index."""

import uuid

import pytest

from inspector.store import dialects, lookup
from tests import seed


@pytest.fixture
def store(server_store):
    """A Store on PostgreSQL, then on MariaDB."""
    return server_store


def new_node(store, state="waiting"):
    node_uuid = str(uuid.uuid4())
    seed.node(store, node_uuid, state)
    return node_uuid


def portable_candidates(store, wanted):
    with store.engine.connect() as connection:
        return lookup.candidates(connection, wanted)


def test_the_statements_are_the_prepared_ones_on_postgresql(store):
    # Otherwise the tests below would compare the portable queries with themselves there.
    prepared = store.engine.dialect.name == "postgresql"
    assert isinstance(store._dialect, dialects.Postgresql) is prepared


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


@pytest.mark.postgresql
@pytest.mark.integration
def test_the_lookup_reads_the_primary_key_index_on_a_large_site(postgresql_store):
    store = postgresql_store
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


@pytest.mark.mysql
@pytest.mark.integration
def test_the_portable_lookup_reads_the_primary_key_index_on_mariadb(mysql_store):
    store = mysql_store
    node = new_node(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("SET SESSION max_recursive_iterations = 20000")
        connection.exec_driver_sql(
            "INSERT INTO attributes (name, value, node_uuid) "
            "WITH RECURSIVE serial (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM serial "
            "WHERE i < 20000) SELECT 'mac', md5(i), %(node)s FROM serial",
            {"node": node},
        )
        connection.exec_driver_sql("ANALYZE TABLE attributes")
    wanted = {"mac": ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"], "bmc_address": ["10.0.0.1"]}
    statement = lookup._counts(wanted)
    sql = str(
        statement.compile(dialect=store.engine.dialect, compile_kwargs={"literal_binds": True})
    )
    with store.engine.connect() as connection:
        plan = [dict(row._mapping) for row in connection.exec_driver_sql("EXPLAIN " + sql)]
    attributes = [row for row in plan if row["table"] == "attributes"]
    assert attributes, plan
    assert all(row["key"] == "PRIMARY" and row["type"] != "ALL" for row in attributes), plan
