"""Migrations build exactly the models' schema, on SQLite, PostgreSQL and MariaDB.

Also, on both servers, the compare-and-swap of a writer blocked on the row,
their isolation (READ COMMITTED on both), the leadership row locked while a run is
recorded, first claims of a marker, and MariaDB's deadlocks.
"""

import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Boolean, event, inspect, select, text, update
from sqlalchemy.engine import make_url

from inspector import errors
from inspector.store import (
    Change,
    NodeRecord,
    Store,
    create_engine,
    schema,
    singletons,
    transitions,
    utcnow,
)
from inspector.store.models import Node, metadata
from tests import seed

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
POSTGRESQL = [pytest.mark.postgresql, pytest.mark.integration]
MYSQL = [pytest.mark.mysql, pytest.mark.integration]
#: Seconds a test waits for a condition before failing.
DEADLINE = 30


@pytest.fixture
def store(server_store) -> Store:
    """A Store on PostgreSQL, then on MariaDB."""
    return server_store


#: What MySQL reports as a boolean column's default (TINYINT(1)), for true() and false().
MYSQL_BOOLEAN_DEFAULTS = {"true": "1", "false": "0"}


def _server_default_differs(
    context, inspected_column, metadata_column, inspected, metadata_default, rendered
):
    """alembic's comparison, except MySQL's `1` for a boolean DEFAULT true (alembic
    compares the rendered `true` with the `1` MySQL stores: not a difference)."""
    if context.dialect.name == "mysql" and isinstance(metadata_column.type, Boolean):
        expected = MYSQL_BOOLEAN_DEFAULTS.get(str(rendered).lower().strip("'"), rendered)
        return str(inspected).strip("'") != expected
    return None  # alembic decides


def schema_differences(url: str) -> list:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={"compare_type": True, "compare_server_default": _server_default_differs},
            )
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def _primary_key_name(connection, db, table: str) -> str | None:
    primary_key = db.get_pk_constraint(table)
    if connection.dialect.name == "mysql" and primary_key["constrained_columns"]:
        # MySQL names every primary key PRIMARY (reflected as None): ours is not kept.
        assert primary_key["name"] is None, primary_key
        return f"pk_{table}"
    return primary_key["name"]


def constraint_names(url: str) -> dict[str, set[str]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            db = inspect(connection)
            return {
                table: {_primary_key_name(connection, db, table)}
                | {fk["name"] for fk in db.get_foreign_keys(table)}
                | {index["name"] for index in db.get_indexes(table)}
                for table in metadata.tables
            }
    finally:
        engine.dispose()


def test_head_revision_is_the_introspections_migration():
    assert schema.head_revision() == "d4f8a2c6e9b1"


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


@pytest.mark.mysql
@pytest.mark.integration
@pytest.mark.parametrize("driver", ["mysql+pymysql", "mariadb+pymysql"])
def test_mariadb_tables_hold_any_text_whatever_the_databases_charset(
    mysql_admin, mysql_url, driver
):
    # A database created with the server's default character set: latin1 upstream.
    url = make_url(mysql_url).set(drivername=driver)
    with mysql_admin.connect() as connection:
        connection.exec_driver_sql(f"ALTER DATABASE `{url.database}` CHARACTER SET latin1")
    rendered = url.render_as_string(hide_password=False)
    schema.upgrade(rendered)
    store = Store.from_url(rendered)
    try:
        assert store.engine.dialect.name == driver.split("+")[0]
        with store.engine.connect() as connection:
            charsets = dict(
                connection.execute(
                    text(
                        "SELECT table_name, table_collation FROM information_schema.tables "
                        "WHERE table_schema = DATABASE() AND table_name <> 'alembic_version'"
                    )
                ).all()
            )
        assert set(charsets) == set(metadata.tables)
        assert all(collation.startswith("utf8mb4_") for collation in charsets.values()), charsets
        seed.node(store, NODE, "starting")
        seed.move(store, NODE, "error", error="Ironic: naïve ✓ 🚀")
        assert store.get_node(NODE).error == "Ironic: naïve ✓ 🚀"
    finally:
        store.close()


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


#: Sessions of the current database waiting for a lock, per server.
LOCK_WAITERS = {
    "postgresql": "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'",
    # InnoDB's transactions (the PROCESS privilege shows every session's).
    "mysql": "SELECT count(*) FROM information_schema.innodb_trx AS trx "
    "JOIN information_schema.processlist AS session ON session.id = trx.trx_mysql_thread_id "
    "WHERE session.db = DATABASE() AND trx.trx_state = 'LOCK WAIT'",
}
#: Seconds between two polls. InnoDB refreshes what innodb_trx shows only when it was
#: last read more than 0.1 s before: polled faster, it never changes.
LOCK_POLL_INTERVAL = {"postgresql": 0.05, "mysql": 0.2}


def _wait_for_lock_waiter(store: Store, done: threading.Event) -> None:
    # Poll until the second writer's UPDATE waits on the first writer's row lock.
    query = text(LOCK_WAITERS[store.engine.dialect.name])
    interval = LOCK_POLL_INTERVAL[store.engine.dialect.name]
    deadline = time.monotonic() + DEADLINE
    with store.engine.connect() as connection:
        while True:
            waiting = connection.execute(query).scalar()
            # pg_stat_activity is read once per transaction (and InnoDB's snapshot
            # under REPEATABLE READ): end it at every poll.
            connection.rollback()
            if waiting:
                return
            assert not done.wait(interval), "second writer did not wait for the row lock"
            assert time.monotonic() < deadline, "second writer never blocked"


def test_concurrent_writers_on_one_version_only_one_wins(store):
    node = seed.node(store, NODE, "waiting")
    done = threading.Event()

    def second_writer() -> NodeRecord:
        try:
            change = Change(NODE, 1, "r2", "abort", "waiting", "error", error="timeout")
            return store.apply(change, node)
        finally:
            done.set()

    with ThreadPoolExecutor(max_workers=1) as pool, store.engine.connect() as first:
        change = Change(NODE, 1, "r1", "continue", "waiting", "processing")
        assert transitions.apply(first, change, node, utcnow()).version == 2
        blocked = pool.submit(second_writer)
        _wait_for_lock_waiter(store, done)
        first.commit()  # releases the row: the waiting UPDATE re-checks version
        with pytest.raises(errors.NodeBusy):
            blocked.result(timeout=DEADLINE)
    node = store.get_node(NODE)
    assert (node.state, node.version, node.error) == ("processing", 2, None)
    assert store.find_request("r2") is None


def test_a_transaction_reads_what_others_committed_since_it_began(store):
    # READ COMMITTED, PostgreSQL's default and what the store's transactions are written
    # for; MariaDB's own default (REPEATABLE READ) would answer "waiting" twice.
    seed.node(store, NODE, "waiting")
    state = select(Node.state).where(Node.uuid == NODE)
    with store.session() as session:
        before = session.execute(state).scalar_one()
        seed.move(store, NODE, "processing")  # another connection, committed
        after = session.execute(state).scalar_one()
    assert (before, after) == ("waiting", "processing")


def test_a_new_leadership_term_waits_for_a_run_recorded_under_the_last(store):
    term = store.claim_leadership("periodic", "old-leader")
    done = threading.Event()

    def claim() -> int:
        try:
            return store.claim_leadership("periodic", "new-leader")
        finally:
            done.set()

    with ThreadPoolExecutor(max_workers=1) as pool:
        with store.engine.begin() as connection:
            run_id = singletons.start_run(
                connection, "periodic", "sync", holder="old-leader", term=term, now=utcnow()
            )
            assert run_id is not None
            claimed = pool.submit(claim)
            # The run's transaction holds the leadership row: the new term waits for it.
            _wait_for_lock_waiter(store, done)
        assert claimed.result(timeout=DEADLINE) == term + 1
    assert [(run.id, run.term) for run in store.task_runs("sync")] == [(run_id, term)]
    assert store.leadership("periodic").holder == "new-leader"


@pytest.mark.mysql
@pytest.mark.integration
def test_a_run_is_recorded_where_insert_has_no_returning(mysql_store, monkeypatch):
    # MySQL has no INSERT ... RETURNING (MariaDB has since 10.5): as MySQL's dialect
    # says, and with the statements MariaDB runs seen (MySQL would refuse RETURNING).
    engine = mysql_store.engine
    monkeypatch.setattr(engine.dialect, "insert_returning", False)
    inserts: list[str] = []

    def seen(_connection, _cursor, statement, *_args) -> None:
        if statement.startswith("INSERT INTO task_runs"):
            inserts.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        term = mysql_store.claim_leadership("periodic", "leader")
        first = mysql_store.start_run("periodic", "sync", "leader", term)
        second = mysql_store.start_run("periodic", "sync", "leader", term)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert len(inserts) == 2 and not any("RETURNING" in insert for insert in inserts), inserts
    runs = mysql_store.task_runs("sync")
    assert [run.id for run in runs] == [first, second] and first < second


def test_first_claims_of_a_marker_meet_on_its_key(store):
    # Several processes claim a leadership nobody held yet: each gets a term of its own
    # or is refused (Conflict, the key is taken), never a database error (a deadlock on
    # the gap where the row was missing, under REPEATABLE READ).
    claimants, rounds = 4, 10
    together = threading.Barrier(claimants, timeout=DEADLINE)

    def claim(kind: str, holder: str) -> int | None:
        together.wait()
        try:
            return store.claim_leadership(kind, holder)
        except errors.Conflict:
            return None

    with ThreadPoolExecutor(max_workers=claimants) as pool:
        for kind in (f"fresh-{n}" for n in range(rounds)):
            holders = [f"worker-{n}" for n in range(claimants)]
            terms = list(pool.map(claim, [kind] * claimants, holders))
            granted = sorted(term for term in terms if term is not None)
            assert granted == list(range(1, len(granted) + 1)), (kind, terms)
            assert store.leadership(kind).term == granted[-1]


@pytest.mark.mysql
@pytest.mark.integration
def test_a_transaction_ended_by_a_deadlock_runs_again_on_mariadb(mysql_store):
    store = mysql_store
    seed.node(store, NODE, "waiting")
    seed.node(store, OTHER, "waiting")
    each_holds_one = threading.Barrier(2, timeout=DEADLINE)
    runs: collections.Counter[str] = collections.Counter()
    table = Node.__table__

    def cross(connection, first: str, second: str) -> int:
        runs[first] += 1
        connection.execute(update(table).where(table.c.uuid == first).values(error=first))
        if runs[first] == 1:
            each_holds_one.wait()  # then each asks for the row the other holds
        connection.execute(update(table).where(table.c.uuid == second).values(error=first))
        return runs[first]

    with ThreadPoolExecutor(max_workers=2) as pool:
        writes = [pool.submit(store._write, cross, NODE, OTHER)]
        writes.append(pool.submit(store._write, cross, OTHER, NODE))
        attempts = sorted(write.result(timeout=DEADLINE) for write in writes)
    # InnoDB ended one of them; it ran again once the other had committed.
    assert attempts == [1, 2]
    errors_written = {store.get_node(NODE).error, store.get_node(OTHER).error}
    assert len(errors_written) == 1  # the one that ran last wrote both rows
