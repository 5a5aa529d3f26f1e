"""Engines: the autocommit engine beside the transactional one, and pool sizes."""

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
