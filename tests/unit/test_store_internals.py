"""The private interfaces of SQLAlchemy and psycopg behind `store.internals` are still there
and still do what the store relies on: a release that changes one fails here."""

import inspect
from datetime import datetime

import pytest
import sqlalchemy
from sqlalchemy.pool import Pool

from inspector.store import internals


def test_pool_invalidate_takes_the_connection_and_the_error():
    parameters = list(inspect.signature(Pool._invalidate).parameters)
    assert parameters[:3] == ["self", "connection", "exception"]


def test_invalidate_reconnects_the_pool(tmp_path):
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    try:
        pooled = engine.raw_connection()
        before = pooled.dbapi_connection
        internals.invalidate(engine, pooled, RuntimeError("the server went away"))
        assert not pooled.is_valid
        pooled.close()
        again = engine.raw_connection()
        try:
            assert again.dbapi_connection is not before  # a new connection
        finally:
            again.close()
    finally:
        engine.dispose()


@pytest.fixture
def psycopg():
    return pytest.importorskip("psycopg")


def test_psycopg_dumps_parameters_with_their_types_and_formats(psycopg):
    adapter = internals.transformer(None)  # no connection: the default adapters
    values, types, formats = internals.dump(adapter, [7, "text", None, datetime(2026, 1, 2)])
    assert len(values) == len(types) == len(formats) == 4
    assert values[2] is None
    names = psycopg.adapters.types
    assert types[0] in (names["int2"].oid, names["int4"].oid, names["int8"].oid)
    assert types[3] == names["timestamp"].oid
    hash(types)  # a key of Libpq's prepared statements


def test_psycopg_loads_rows_and_makes_errors_from_a_result(psycopg):
    adapter_type = type(internals.transformer(None))
    assert list(inspect.signature(adapter_type.set_pgresult).parameters)[:2] == ["self", "result"]
    load_rows = inspect.signature(adapter_type.load_rows).parameters
    assert list(load_rows) == ["self", "row0", "row1", "make_row"]
    assert list(inspect.signature(psycopg.errors.error_from_result).parameters)[:1] == ["result"]
