"""The [database] bounds as the servers see them: PostgreSQL's session settings and
libpq's TCP user timeout, MariaDB's session variables and the socket's, and a statement
that runs past statement_timeout ended by the server (the store answers 503)."""

import socket
import time

import pytest
from sqlalchemy import text

from inspector.errors import ServiceUnavailable
from inspector.store import Store, create_engine
from inspector.store.bounds import Bounds

pytestmark = pytest.mark.integration

BOUNDS = Bounds(connect=3, socket=4.0, statement=1.5, lock=0.5, idle_in_transaction=20)


def _show(engine, *names: str) -> list:
    with engine.connect() as connection:
        return [connection.execute(text(f"SHOW {name}")).scalar() for name in names]


def test_postgresql_sessions_carry_the_bounds(postgresql_url):
    engine = create_engine(postgresql_url, bounds=BOUNDS)
    try:
        settings = _show(
            engine,
            "statement_timeout",
            "lock_timeout",
            "idle_in_transaction_session_timeout",
            "tcp_user_timeout",  # the server's own side: its default
        )
        assert settings[:3] == ["1500ms", "500ms", "20s"]
        with engine.connect() as connection:
            pgconn = connection.connection.dbapi_connection.pgconn
            sock = socket.socket(fileno=pgconn.socket)  # the same descriptor, not a copy
            try:
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 4000
                assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            finally:
                sock.detach()
    finally:
        engine.dispose()


def test_mariadb_sessions_carry_the_bounds(mysql_url):
    engine = create_engine(mysql_url, bounds=BOUNDS)
    try:
        with engine.connect() as connection:
            values = connection.execute(
                text(
                    "SELECT @@session.max_statement_time, @@session.innodb_lock_wait_timeout, "
                    "@@session.lock_wait_timeout"
                )
            ).one()
            assert tuple(float(v) for v in values) == (1.5, 1.0, 1.0)
            sock = connection.connection.dbapi_connection._sock
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 4000
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["postgresql", "mysql"])
def test_a_statement_past_its_time_is_ended_by_the_server(request, backend):
    url = request.getfixturevalue(f"{backend}_url")
    store = Store.from_url(url, bounds=BOUNDS)
    sleep = "SELECT pg_sleep(5)" if backend == "postgresql" else "SELECT SLEEP(5)"
    started = time.monotonic()
    try:
        with pytest.raises(ServiceUnavailable), store.session() as session:
            result = session.execute(text(sleep)).scalar()
            # MariaDB answers an interrupted SLEEP() with 1 instead of an error.
            if result == 1:
                raise ServiceUnavailable("interrupted", service="database")
    finally:
        store.close()
    assert time.monotonic() - started < 4.5  # not the statement's 5 s
