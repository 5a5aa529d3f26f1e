"""Migrations build exactly the models' schema, on SQLite and on PostgreSQL.

Also the compare-and-swap against PostgreSQL, including a writer blocked on the row.
"""

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from inspector import errors
from inspector.store import Store, create_engine, default_url, nodes, schema, utcnow
from inspector.store.models import metadata

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
POSTGRESQL = [pytest.mark.postgresql, pytest.mark.integration]
#: Seconds a test waits for a condition before failing.
DEADLINE = 30


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=POSTGRESQL)],
)
def database_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return default_url(tmp_path)
    return request.getfixturevalue("postgresql_url")


@pytest.fixture
def pg_store(postgresql_url) -> Iterator[Store]:
    schema.upgrade(postgresql_url)
    store = Store.from_url(postgresql_url)
    yield store
    store.close()


def schema_differences(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={"compare_type": True, "compare_server_default": True},
            )
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def constraint_names(url: str) -> dict[str, set[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            db = inspect(connection)
            return {
                table: {db.get_pk_constraint(table)["name"]}
                | {fk["name"] for fk in db.get_foreign_keys(table)}
                | {index["name"] for index in db.get_indexes(table)}
                for table in metadata.tables
            }
    finally:
        engine.dispose()


def test_head_revision_is_the_snapshots_migration():
    assert schema.head_revision() == "b7e3d9a1c5f2"


def test_upgrade_builds_the_models_schema(database_url):
    assert schema.current_revision(database_url) is None
    head = schema.head_revision()
    assert schema.upgrade(database_url) == (None, head)
    assert schema.current_revision(database_url) == head
    assert schema_differences(database_url) == []


def test_upgrade_twice_is_a_no_op(database_url):
    head = schema.head_revision()
    schema.upgrade(database_url)
    assert schema.upgrade(database_url) == (head, head)
    assert schema.current_revision(database_url) == head
    assert schema_differences(database_url) == []


def test_constraint_names_follow_the_naming_convention(database_url):
    schema.upgrade(database_url)
    expected = {
        table.name: {table.primary_key.name}
        | {fk.name for fk in table.foreign_key_constraints}
        | {index.name for index in table.indexes}
        for table in metadata.tables.values()
    }
    assert constraint_names(database_url) == expected
    assert "fk_attributes_node_uuid_nodes" in expected["attributes"]


@pytest.mark.postgresql
@pytest.mark.integration
def test_compare_and_swap_on_postgresql(pg_store):
    pg_store.create_node(NODE, "starting")
    stale = pg_store.get_node(NODE)
    assert pg_store.set_state(NODE, stale.version, "waiting") == 2
    with pytest.raises(errors.NodeBusy):
        pg_store.set_state(NODE, stale.version, "error", error="timeout")
    node = pg_store.get_node(NODE)
    assert (node.state, node.version, node.error) == ("waiting", 2, None)
    with pytest.raises(errors.NotFound):
        pg_store.set_state("00000000-0000-0000-0000-000000000000", 1, "waiting")


def _wait_for_lock_waiter(store: Store, done: threading.Event) -> None:
    # Poll until the second writer's UPDATE waits on the first writer's row lock.
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + DEADLINE
    with store.engine.connect() as connection:
        while True:
            waiting = connection.execute(query).scalar()
            # pg_stat_activity is read once per transaction: end it at every poll.
            connection.rollback()
            if waiting:
                return
            assert not done.wait(0.05), "second writer did not wait for the row lock"
            assert time.monotonic() < deadline, "second writer never blocked"


@pytest.mark.postgresql
@pytest.mark.integration
def test_concurrent_writers_on_one_version_only_one_wins(pg_store):
    pg_store.create_node(NODE, "waiting")
    done = threading.Event()

    def second_writer() -> int:
        try:
            return pg_store.set_state(NODE, 1, "error", error="timeout")
        finally:
            done.set()

    with ThreadPoolExecutor(max_workers=1) as pool, Session(pg_store.engine) as first:
        assert nodes.set_state(first, NODE, 1, "processing", now=utcnow()) == 2
        blocked = pool.submit(second_writer)
        _wait_for_lock_waiter(pg_store, done)
        first.commit()  # releases the row: the waiting UPDATE re-checks version
        with pytest.raises(errors.NodeBusy):
            blocked.result(timeout=DEADLINE)
    node = pg_store.get_node(NODE)
    assert (node.state, node.version, node.error) == ("processing", 2, None)


@pytest.mark.postgresql
@pytest.mark.integration
def test_apply_is_one_atomic_statement_on_postgresql(pg_store):
    from inspector.errors import Conflict, NodeBusy  # noqa: PLC0415
    from inspector.store import Change  # noqa: PLC0415

    assert pg_store._one_statement_swap  # the PostgreSQL path is the one tested here
    node = pg_store.apply(Change(NODE, None, "r1", "inspect", None, "starting"))
    moved = pg_store.apply(Change(NODE, node.version, "r2", "wait", "starting", "waiting"), node)
    assert moved.version == node.version + 1
    assert pg_store.get_node(NODE) == moved
    assert pg_store.find_request("r2").version == moved.version
    # A stale version writes nothing, neither the state nor the request row.
    with pytest.raises(NodeBusy):
        pg_store.apply(Change(NODE, node.version, "r3", "abort", "waiting", "error"), node)
    assert pg_store.find_request("r3") is None
    assert pg_store.get_node(NODE).state == "waiting"
    # A request id seen before is refused, and the state is left as it was.
    current = pg_store.get_node(NODE)
    with pytest.raises(Conflict):
        pg_store.apply(Change(NODE, current.version, "r2", "abort", "waiting", "error"), current)
    assert pg_store.get_node(NODE) == current


@pytest.mark.postgresql
@pytest.mark.integration
def test_create_is_one_atomic_statement_on_postgresql(pg_store):
    from inspector.errors import Conflict  # noqa: PLC0415
    from inspector.store import Change  # noqa: PLC0415

    at = datetime(2026, 1, 2, 3, 4, 5)
    change = Change(NODE, None, "r1", "inspect", None, "starting", started_at=at, error=None)
    node = pg_store.apply(change)
    assert pg_store.get_node(NODE) == node
    assert (node.version, node.started_at, node.manage_boot) == (1, at, True)
    assert pg_store.find_request("r1").version == 1
    # The node exists: nothing is written, not even the request row.
    with pytest.raises(Conflict):
        pg_store.apply(Change(NODE, None, "r2", "inspect", None, "starting"))
    assert pg_store.find_request("r2") is None
    # The request id was seen: no node is created.
    with pytest.raises(Conflict):
        pg_store.apply(Change(OTHER, None, "r1", "inspect", None, "starting"))
    with pytest.raises(errors.NotFound):
        pg_store.get_node(OTHER)
