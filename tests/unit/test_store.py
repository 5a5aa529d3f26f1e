"""The store on SQLite: sessions, cascades, pragmas, URLs, error wrapping (the contract of
its operations on every database: tests/contract/test_store.py)."""

import os
from collections.abc import Iterator
from datetime import datetime

import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.engine import make_url

from inspector import errors
from inspector.store import Store, create_engine, default_url
from inspector.store.engine import usable_url
from inspector.store.models import Attribute, Node, metadata
from tests import seed

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901)


@pytest.fixture
def store(tmp_path) -> Iterator[Store]:
    store = Store.from_url(default_url(tmp_path / "state"))
    metadata.create_all(store.engine)
    yield store
    store.close()


def test_default_url_creates_the_directory(tmp_path):
    state_path = tmp_path / "a" / "b"
    url = default_url(state_path)
    assert url == f"sqlite:///{state_path}/inspector.sqlite"
    assert os.path.isdir(state_path)


def test_session_rolls_back_on_error(store):
    with pytest.raises(errors.NotFound), store.session() as session:
        session.add(Node(uuid=NODE, state="starting", version=1, updated_at=T0))
        session.flush()
        raise errors.NotFound("abandon")
    with pytest.raises(errors.NotFound):
        store.get_node(NODE)


def _attribute_count(store: Store, node_uuid: str) -> int:
    with store.session() as session:
        query = select(func.count()).where(Attribute.node_uuid == node_uuid)
        return session.scalar(query.select_from(Attribute))


def test_attributes_are_deleted_with_their_node(store):
    seed.node(store, NODE, "waiting")
    seed.node(store, OTHER, "waiting")
    with store.session() as session:
        session.add_all(
            [
                Attribute(name="mac", value="52:54:00:00:00:01", node_uuid=NODE),
                Attribute(name="bmc_address", value="10.0.0.1", node_uuid=NODE),
                Attribute(name="mac", value="52:54:00:00:00:02", node_uuid=OTHER),
            ]
        )
    with store.session() as session:
        session.execute(delete(Node).where(Node.uuid == NODE))
    assert _attribute_count(store, NODE) == 0
    assert _attribute_count(store, OTHER) == 1


def test_attribute_of_unknown_node_is_refused(store):
    with pytest.raises(errors.Conflict), store.session() as session:
        session.add(Attribute(name="mac", value="52:54:00:00:00:01", node_uuid=NODE))


def test_sqlite_connections_use_wal_foreign_keys_and_busy_timeout(store):
    with store.engine.connect() as connection:
        pragma = connection.exec_driver_sql
        assert pragma("PRAGMA journal_mode").scalar() == "wal"
        assert pragma("PRAGMA foreign_keys").scalar() == 1
        assert pragma("PRAGMA busy_timeout").scalar() == 30_000


def test_unreachable_database_is_service_unavailable_without_password(caplog):
    store = Store.from_url("postgresql+psycopg://inspector:s3cret@127.0.0.1:1/nodb")
    try:
        with pytest.raises(errors.ServiceUnavailable) as raised:
            store.get_node(NODE)
    finally:
        store.close()
    assert raised.value.retryable
    # The message may reach API callers: no URL in it; the details are in the log.
    assert raised.value.message == "the database is unavailable"
    assert "127.0.0.1:1/nodb" in caplog.text
    assert "s3cret" not in caplog.text


def test_missing_schema_is_an_inspector_error(tmp_path, caplog):
    store = Store.from_url(default_url(tmp_path))
    try:
        with pytest.raises(errors.ServiceUnavailable):
            store.get_node(NODE)
    finally:
        store.close()
    assert "no such table" in caplog.text


@pytest.mark.parametrize(
    ("url", "usable"),
    [
        ("postgresql://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
        ("postgresql+psycopg2://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
        ("mysql://u:p@h/db?charset=utf8", "mysql+pymysql://u:p@h/db?charset=utf8"),
        ("mysql+pymysql://u:p@h/db", "mysql+pymysql://u:p@h/db"),
        ("sqlite:///x", "sqlite:///x"),
    ],
)
def test_ironic_inspector_urls_use_our_driver_when_theirs_is_missing(monkeypatch, url, usable):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert usable_url(make_url(url)).render_as_string(hide_password=False) == usable


def test_a_postgresql_url_without_a_driver_makes_a_usable_engine(monkeypatch):
    # psycopg2, which `postgresql://` implies, is not a dependency: psycopg 3 is used.
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    engine = create_engine("postgresql://u:p@127.0.0.1:1/db")
    try:
        assert engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


@pytest.mark.parametrize("url", ["nonsense://", "not a url", "sqlite+nodriver://"])
def test_unusable_url_is_a_config_error(url):
    with pytest.raises(errors.ConfigError):
        create_engine(url)
