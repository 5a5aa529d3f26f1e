"""Prepared statements on SQLite: values as SQLAlchemy returns them, positional parameters,
errors wrapped, a dropped connection invalidated and retried once, writes committed; the
upserts' text."""

from datetime import datetime

import pytest
from sqlalchemy import bindparam, exc, select, update

from inspector import errors
from inspector.store import Store, default_url, schema
from inspector.store.models import Node
from inspector.store.prepared import Prepared
from inspector.store.transitions import READ_NODE
from tests import seed

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


def test_row_holds_processed_values(store):
    seed.node(store, NODE, "waiting", started_at=T0, manage_boot=False)
    row = Prepared(store.engine, READ_NODE).first(uuid=NODE)
    # SQLite stores timestamps as text and booleans as integers: the types' processors
    # turn them back, as a Core query would.
    assert row == {
        "uuid": NODE,
        "state": "waiting",
        "version": 1,
        "started_at": T0,
        "finished_at": None,
        "error": None,
        "manage_boot": False,
        "updated_at": T0,
    }
    with store.engine.connect() as connection:
        assert row == connection.execute(READ_NODE, {"uuid": NODE}).one()._asdict()


def test_no_row_is_none(store):
    assert Prepared(store.engine, READ_NODE).first(uuid=NODE) is None


def test_positional_parameters_follow_the_statement(store):
    seed.node(store, NODE, "waiting")
    nodes = Node.__table__
    statement = select(nodes.c.state).where(
        nodes.c.version == bindparam("version"), nodes.c.uuid == bindparam("uuid")
    )
    read = Prepared(store.engine, statement)
    assert read.first(uuid=NODE, version=1) == {"state": "waiting"}
    assert read.first(uuid=NODE, version=2) is None


def test_driver_error_is_sqlalchemys(tmp_path):
    store = Store.from_url(default_url(tmp_path))  # no schema
    try:
        with pytest.raises(exc.DBAPIError) as raised:
            Prepared(store.engine, READ_NODE).first(uuid=NODE)
        assert not raised.value.connection_invalidated
        with pytest.raises(errors.ServiceUnavailable):
            store.get_node(NODE)
    finally:
        store.close()


def drop_pooled_connection(store):
    """The pooled connection dies while idle in the pool, as in a database restart."""
    pooled = store.engine.raw_connection()
    dbapi_connection = pooled.dbapi_connection
    pooled.close()
    dbapi_connection.close()


def test_dropped_connection_is_invalidated(store):
    seed.node(store, NODE, "waiting")
    drop_pooled_connection(store)
    with pytest.raises(exc.DBAPIError) as raised:
        Prepared(store.engine, READ_NODE).first(uuid=NODE)
    assert raised.value.connection_invalidated
    assert Prepared(store.engine, READ_NODE).first(uuid=NODE)["state"] == "waiting"


def test_store_retries_a_dropped_connection(store):
    seed.node(store, NODE, "waiting")
    drop_pooled_connection(store)
    # No caller sees the drop.
    assert store.get_node(NODE).state == "waiting"


def test_a_write_is_committed_and_counts_its_rows(store):
    seed.node(store, NODE, "waiting")
    nodes = Node.__table__
    statement = (
        update(nodes)
        .where(nodes.c.uuid == bindparam("uuid"))
        .values(state=bindparam("new_state"), finished_at=bindparam("at"))
    )
    write = Prepared(store.engine, statement)
    # The DateTime goes through its bind processor (SQLite stores text).
    assert write.run(uuid=NODE, new_state="finished", at=T0) == 1
    assert write.run(uuid=OTHER, new_state="finished", at=T0) == 0
    other = Store.from_url(str(store.engine.url))  # another pool: only committed rows
    try:
        assert other.get_node(NODE).state == "finished"
        assert other.get_node(NODE).finished_at == T0
    finally:
        other.close()


def test_a_constant_bound_in_the_statement_is_refused(store):
    nodes = Node.__table__
    statement = update(nodes).values(version=nodes.c.version + 1)
    with pytest.raises(ValueError, match="constants"):
        Prepared(store.engine, statement)


def test_upserts_name_every_column_once():
    from inspector.store import upserts  # noqa: PLC0415
    from inspector.store.snapshots import SNAPSHOTS  # noqa: PLC0415

    made = upserts.statements(SNAPSHOTS, ("node_uuid",), ("node", "ports", "taken_at"))
    assert str(made["postgresql"]) == (
        "INSERT INTO ironic_snapshots (node_uuid, node, ports, taken_at) "
        "VALUES (:node_uuid, :node, :ports, :taken_at) ON CONFLICT (node_uuid) DO UPDATE "
        "SET node = excluded.node, ports = excluded.ports, taken_at = excluded.taken_at"
    )
    assert str(made["mysql"]).endswith(
        "ON DUPLICATE KEY UPDATE node = VALUES(node), ports = VALUES(ports), "
        "taken_at = VALUES(taken_at)"
    )
