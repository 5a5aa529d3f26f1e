"""Prepared statements sent straight to libpq (store/prepared.py, Libpq) on real
PostgreSQL: the same rows and errors as psycopg's cursor, parameters whose types change
between calls, and statements prepared again on a new connection."""

import uuid

import pytest
from sqlalchemy import Integer, String, bindparam, column, select, table, update

from inspector import errors
from inspector.store import Change, transitions
from inspector.store.prepared import Libpq, Prepared

NODES = table("nodes", column("uuid", String), column("state", String), column("error", String))


@pytest.fixture
def store(postgresql_store):
    return postgresql_store


def cursor_only(prepared: Prepared) -> Prepared:
    """The same statement through psycopg's cursor, as before Libpq."""
    prepared._libpq = None
    return prepared


def new_node(store, state="starting"):
    node_uuid = str(uuid.uuid4())
    store.apply(Change(node_uuid, None, uuid.uuid4().hex, "inspect", None, state, status="done"))
    return node_uuid


def test_every_prepared_statement_of_the_store_goes_through_libpq(store):
    assert store._dialect._read_node._libpq is not None
    assert store._dialect._read_nodes._libpq is not None
    assert store._dialect._create._libpq is not None
    assert store._load._libpq is not None
    assert store._finish._libpq is not None


def test_rows_are_the_cursors_rows(store):
    first, second = new_node(store), new_node(store, "waiting")
    engine = store._autocommit
    for statement, params in (
        (transitions.READ_NODE, {"uuid": first}),
        (transitions.READ_NODES, {"uuids": [first, second, str(uuid.uuid4())]}),
    ):
        direct = Prepared(engine, statement)
        assert direct._libpq is not None
        expected = cursor_only(Prepared(engine, statement)).all(**dict(params))
        assert sorted(direct.all(**dict(params)), key=str) == sorted(expected, key=str)
        assert expected  # the nodes were found: not a comparison of two empty answers


def test_a_parameter_that_is_none_then_a_value_makes_another_statement(store):
    node = new_node(store)
    statement = (
        update(NODES).where(NODES.c.uuid == bindparam("node")).values(error=bindparam("message"))
    )
    set_error = Prepared(store._autocommit, statement)
    assert set_error.run(node=node, message=None) == 1
    assert store.get_node(node).error is None
    assert set_error.run(node=node, message="broken") == 1
    assert store.get_node(node).error == "broken"
    assert set_error.run(node=str(uuid.uuid4()), message="broken") == 0


def test_a_server_error_is_the_same_error(store):
    node = new_node(store)
    # A second node row with the same primary key: the store's create says Conflict.
    with pytest.raises(errors.Conflict):
        store.apply(Change(node, None, uuid.uuid4().hex, "inspect", None, "starting"))
    bad = Prepared(store._autocommit, select(column("x", Integer)).select_from(table("nowhere")))
    with pytest.raises(errors.ServiceUnavailable):
        store._retried(bad.first)


def test_statements_are_prepared_again_on_a_new_connection(store):
    node = new_node(store)
    assert store.get_node(node).state == "starting"
    store.close()  # every pooled connection closed, their prepared statements gone
    assert store.get_node(node).state == "starting"


def test_a_statement_the_server_forgot_is_prepared_again(store):
    node = new_node(store)
    assert store.get_node(node).state == "starting"
    connection = store._autocommit.raw_connection()  # the pool's one connection
    try:
        connection.dbapi_connection.execute("DEALLOCATE ALL")
    finally:
        connection.close()
    assert store.get_node(node).state == "starting"


def test_pyformat_is_numbered_once_per_name():
    libpq = Libpq("SELECT %(a)s, %(b)s, %(a)s WHERE x LIKE 'y%%'")
    assert libpq._sql == b"SELECT $1, $2, $1 WHERE x LIKE 'y%'"
    assert libpq._names == ("a", "b")
