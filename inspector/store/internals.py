"""The private interfaces of SQLAlchemy and psycopg that the store relies on, each behind one
function here, so that a release of either that changes one fails
tests/unit/test_store_internals.py instead of a running service.

SQLAlchemy: `Pool._invalidate`, what its own Connection calls when the server dropped a
connection. psycopg: the Transformer's adaptation of parameters and rows (its cursor's
own machinery) and `errors.error_from_result`, which `prepared.Libpq` uses to run a
statement through libpq with psycopg's values, rows and errors. PyMySQL: the socket of
a connection (`_sock`), whose keepalives and TCP user timeout libpq would set itself.
"""

import socket
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Engine

try:
    from psycopg import adapt as pg_adapt
    from psycopg import errors as pg_errors
except ImportError:  # psycopg is the `postgresql` extra: only Libpq uses it
    pass


def invalidate(engine: Engine, connection: Any, error: BaseException) -> None:
    """As SQLAlchemy's Connection does on a disconnect: this pooled connection and every
    other one of the pool (they predate the drop, a database restart) are reconnected on
    their next checkout."""
    engine.pool._invalidate(connection, error)


def transformer(dbapi_connection: Any) -> Any:
    """psycopg's adapter of values and rows for one connection (its cursor's own)."""
    return pg_adapt.Transformer(dbapi_connection)


def dump(adapter: Any, values: Sequence[Any]) -> tuple[list, tuple[int, ...], list]:
    """The parameters as libpq takes them: their bytes, their types' OIDs, their formats."""
    dumped = adapter.dump_sequence(values, [pg_adapt.PyFormat.AUTO] * len(values))
    return dumped, tuple(adapter.types), adapter.formats


def load_rows(adapter: Any, result: Any, count: int) -> list[tuple]:
    """The first `count` rows of a libpq result, as psycopg's cursor returns them."""
    adapter.set_pgresult(result)
    try:
        return adapter.load_rows(0, count, tuple)
    finally:
        adapter.set_pgresult(None)


def error_from_result(result: Any) -> Exception:
    """The psycopg error of a failed libpq result, as its cursor raises it."""
    return pg_errors.error_from_result(result)


def bound_mysql_socket(dbapi_connection: Any, seconds: float, keepalive_idle: int) -> bool:
    """Give a PyMySQL connection's socket TCP keepalives (after `keepalive_idle` seconds
    of silence, then every second) and a TCP user timeout of `seconds`: a server that
    stopped answering ends the connection, as libpq's parameters do on PostgreSQL.
    False when the connection has no such socket (another driver, or not Linux)."""
    sock = getattr(dbapi_connection, "_sock", None)
    if not isinstance(sock, socket.socket) or not hasattr(socket, "TCP_USER_TIMEOUT"):
        return False
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, keepalive_idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, max(1, round(seconds)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, round(seconds * 1000))
    return True
