"""Engines: the autocommit engine beside the transactional one, pool sizes, MySQL's
isolation level and deadlocks."""

import pymysql
from sqlalchemy import exc
from sqlalchemy.pool.base import ResetStyle

from inspector.store import create_engine
from inspector.store import engine as engines

SERVER_URL = "postgresql+psycopg://inspector:s3cret@127.0.0.1:1/nodb"


def test_server_autocommit_engine_has_its_own_pool_that_never_rolls_back():
    engine = create_engine(SERVER_URL)
    autocommit = engines.create_autocommit_engine(engine)
    try:
        assert autocommit.pool is not engine.pool
        assert autocommit.url == engine.url
        assert autocommit.dialect._on_connect_isolation_level == "AUTOCOMMIT"
        # No rollback when a connection returns: in autocommit nothing is left open.
        assert autocommit.pool._reset_on_return is ResetStyle.reset_none
        for pool in (engine.pool, autocommit.pool):
            assert pool.size() == engines.POOL_SIZE
    finally:
        autocommit.dispose()
        engine.dispose()


def test_sqlite_autocommit_engine_shares_the_pool(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    autocommit = engines.create_autocommit_engine(engine)
    assert autocommit.pool is engine.pool
    assert autocommit.get_execution_options()["isolation_level"] == "AUTOCOMMIT"
    engine.dispose()


MYSQL_URL = "mysql+pymysql://inspector:s3cret@127.0.0.1:1/nodb"


def test_mysql_sessions_are_read_committed_as_on_postgresql():
    engine = create_engine(MYSQL_URL)
    autocommit = engines.create_autocommit_engine(engine)
    postgresql = create_engine(SERVER_URL)
    try:
        assert engine.dialect._on_connect_isolation_level == "READ COMMITTED"
        assert autocommit.dialect._on_connect_isolation_level == "AUTOCOMMIT"
        # PostgreSQL keeps its server's default (READ COMMITTED): nothing is sent.
        assert postgresql.dialect._on_connect_isolation_level is None
    finally:
        for each in (engine, autocommit, postgresql):
            each.dispose()


def _driver_error(module, code):
    return exc.OperationalError("UPDATE nodes ...", {}, module.OperationalError(code, "..."))


def test_only_mysqls_deadlock_is_a_deadlock():
    mysql = create_engine(MYSQL_URL)
    postgresql = create_engine(SERVER_URL)
    try:
        assert engines.is_deadlock(mysql, _driver_error(pymysql.err, engines.MYSQL_DEADLOCK))
        # A lock wait timeout rolls back the statement only; a duplicate key is a Conflict.
        assert not engines.is_deadlock(mysql, _driver_error(pymysql.err, 1205))
        assert not engines.is_deadlock(mysql, _driver_error(pymysql.err, 1062))
        assert not engines.is_deadlock(postgresql, _driver_error(pymysql.err, 1213))
    finally:
        mysql.dispose()
        postgresql.dispose()
