"""Engines: the autocommit engine beside the transactional one, pool sizes, MySQL's
isolation level and deadlocks."""

import pymysql
from sqlalchemy import exc
from sqlalchemy.pool.base import ResetStyle

from inspector.conf import load as load_conf
from inspector.store import Store, create_engine
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
            assert pool.size() == 10  # our default max_pool_size (oslo.db's is 5)
    finally:
        autocommit.dispose()
        engine.dispose()


def _pool_settings(pool) -> tuple:
    return pool.size(), pool._max_overflow, pool.timeout(), pool._recycle


def test_the_database_pool_options_size_both_pools_of_a_store(tmp_path):
    config = tmp_path / "inspector.conf"
    config.write_text(
        f"[database]\nconnection = {SERVER_URL}\nmax_pool_size = 17\nmax_overflow = 3\n"
        "pool_timeout = 7\nconnection_recycle_time = 600\n"
    )
    conf = load_conf(["--config-file", str(config)])
    store = Store.from_conf(conf)
    try:
        for pool in (store.engine.pool, store._autocommit.pool):
            assert _pool_settings(pool) == (17, 3, 7, 600)
    finally:
        store.close()


def test_the_pool_defaults_keep_a_busy_process_connected():
    conf = load_conf([])
    # 10 and 20, not oslo.db's 5 and 50: a pool below the busy threads reconnects.
    assert engines.Pool.from_conf(conf) == engines.Pool(
        size=10, overflow=20, timeout=2, recycle=3600
    )
    engine = create_engine(SERVER_URL, engines.Pool.from_conf(conf))
    try:
        # pool_timeout 2 s, not SQLAlchemy's 30 (oslo.db's): within an API answer's time.
        assert _pool_settings(engine.pool) == (10, 20, 2, 3600)
    finally:
        engine.dispose()


def test_ironic_inspectors_old_names_of_the_pool_options(tmp_path):
    config = tmp_path / "ironic-inspector.conf"
    config.write_text("[DEFAULT]\nsql_max_overflow = 4\n[DATABASE]\nsqlalchemy_pool_timeout = 9\n")
    pool = engines.Pool.from_conf(load_conf(["--config-file", str(config)]))
    assert (pool.overflow, pool.timeout) == (4, 9)


def test_unlimited_pools(tmp_path):
    engine = create_engine(SERVER_URL, engines.Pool(size=0, overflow=-1, recycle=-1))
    try:
        assert _pool_settings(engine.pool)[:2] == (0, -1)
        assert engine.pool._recycle == -1
    finally:
        engine.dispose()


def test_sqlite_keeps_sqlalchemys_pool(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}", engines.Pool(size=17))
    try:
        assert engine.pool.size() == 5  # SQLAlchemy's QueuePool default, not 17
    finally:
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
