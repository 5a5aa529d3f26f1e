"""`inspector status` reads a SQLite database with sqlite3 (inspector.cmd.status_read): the
same census and leader as the store's, on the same database; anything else, and any
failure, through the store, which says what is wrong as it always did."""

import pytest

from inspector.cmd import status_cmd, status_read
from inspector.errors import InspectorError
from inspector.firewall import manager
from inspector.machine import State
from inspector.store import Store, database_url, engine, schema
from tests import seed


def test_the_constants_are_the_stores_and_the_firewalls():
    assert status_read.SQLITE_FILE == engine.SQLITE_FILE
    assert status_read.SQLITE_BUSY_TIMEOUT_S * 1000 == engine.SQLITE_BUSY_TIMEOUT_MS
    assert status_cmd.FIREWALL == manager.KIND


@pytest.fixture
def embedded(conf):
    """The embedded database of conf with nodes, leaders, runs and notifications."""
    url = database_url(conf)
    schema.upgrade(url)
    db = Store.from_url(url, notify=True)
    try:
        for i, state in enumerate([State.WAITING, State.WAITING, State.FINISHED, State.ERROR]):
            seed.node(db, f"00000000-0000-4000-8000-00000000000{i}", state)
        term = db.claim_leadership("periodic", "host-1-42")
        db.finish_run(db.start_run("periodic", "timeout", "host-1-42", term), "0 timed out")
        db.start_run("periodic", "timeout", "host-1-42", term)  # the latest, running
        db.start_run("periodic", "expiry", "host-1-42", term)
        db.claim_leadership("firewall", "host-2-43")
        db.claim_leadership("firewall", "host-3-44")
        yield db
    finally:
        db.close()


def test_the_census_and_leader_are_the_stores(conf, embedded):
    expected = embedded.census()
    database = status_read.Database(conf)
    try:
        assert database.path is not None  # read with sqlite3
        census = database.census()
        assert database._store is None  # no store opened
        assert vars(census) == vars(expected)
        assert expected.nodes_by_state["waiting"] == 2 and expected.notifications_pending
        assert set(expected.last_runs) == {"timeout", "expiry"}
        assert expected.last_runs["timeout"][1] is None  # the running one, not the ended
        mark = embedded.leadership("firewall")
        assert database.leader("firewall") == (mark.holder, mark.term, mark.at)
        assert database.leader("notifications") is None
    finally:
        database.close()


def test_a_database_without_its_tables_is_the_stores_to_report(conf):
    path = status_read.sqlite_path(conf.database.connection, conf.state_path)
    open(path, "w").close()  # an empty file: no schema
    database = status_read.Database(conf)
    try:
        assert database.path is None
        with pytest.raises(InspectorError):
            database.census()
    finally:
        database.close()


@pytest.mark.parametrize(
    ("connection", "expected"),
    [
        ("", "/state/inspector.sqlite"),
        ("sqlite:////var/lib/x.sqlite", "/var/lib/x.sqlite"),
        ("sqlite:///relative.sqlite", "relative.sqlite"),
        ("sqlite:///x.sqlite?timeout=3", None),
        ("sqlite://", None),
        ("postgresql+psycopg://u:p@db/inspector", None),
        ("mysql+pymysql://u:p@db/inspector", None),
    ],
)
def test_which_urls_sqlite3_reads(connection, expected):
    assert status_read.sqlite_path(connection, "/state") == expected
