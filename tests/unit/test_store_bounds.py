"""The [database] bounds as each driver takes them: libpq's parameters and server settings,
PyMySQL's timeouts and session variables, the sockets' keepalives; and no statement once
a request's deadline has passed."""

import socket

import pytest
from sqlalchemy import event, make_url

from inspector import deadlines
from inspector.conf import load as load_conf
from inspector.errors import ServiceUnavailable
from inspector.store import Store, internals, schema
from inspector.store.bounds import Bounds, connect_args, mysql_session_settings
from tests.fakes.clock import Clock

POSTGRESQL = "postgresql+psycopg://inspector:s3cret@db.example.com/inspector"
MYSQL = "mysql+pymysql://inspector:s3cret@db.example.com/inspector"


def test_postgresql_connections_get_keepalives_a_user_timeout_and_server_settings():
    args = connect_args(make_url(POSTGRESQL), Bounds())
    assert args == {
        "connect_timeout": 2,
        "keepalives": 1,
        "keepalives_idle": 1,
        "keepalives_interval": 1,
        "keepalives_count": 3,
        "tcp_user_timeout": 3000,
        "options": "-c statement_timeout=3000 -c lock_timeout=2000 "
        "-c idle_in_transaction_session_timeout=10000",
    }


def test_the_options_set_every_bound(tmp_path):
    config = tmp_path / "inspector.conf"
    config.write_text(
        "[database]\nconnect_timeout = 5\nsocket_timeout = 7.5\nstatement_timeout = 0\n"
        "lock_timeout = 1.5\nidle_in_transaction_timeout = 60\n"
    )
    bounds = Bounds.from_conf(load_conf(["--config-file", str(config)]))
    assert bounds == Bounds(connect=5, socket=7.5, statement=0, lock=1.5, idle_in_transaction=60)
    args = connect_args(make_url(POSTGRESQL), bounds)
    assert (args["connect_timeout"], args["tcp_user_timeout"], args["keepalives_count"]) == (
        5,
        7500,
        8,
    )
    # 0: no limit, as PostgreSQL reads it.
    assert args["options"].startswith("-c statement_timeout=0 -c lock_timeout=1500 ")


def test_what_the_url_sets_is_kept_and_its_server_settings_win():
    url = make_url(
        POSTGRESQL + "?connect_timeout=30&tcp_user_timeout=9000&options=-c%20lock_timeout%3D5s"
    )
    args = connect_args(url, Bounds())
    assert "connect_timeout" not in args and "tcp_user_timeout" not in args
    # Later settings win: the URL's come after ours.
    assert args["options"].endswith("idle_in_transaction_session_timeout=10000 -c lock_timeout=5s")


class Connecting(Exception):
    """Raised instead of connecting, with the driver's parameters."""


def parameters(engine) -> dict:
    """The parameters the engine's driver would be given to connect (no connection made)."""

    def capture(_dialect, _record, _args, params):
        raise Connecting(params)

    event.listen(engine, "do_connect", capture)
    with pytest.raises(Connecting) as caught:
        engine.raw_connection()
    return caught.value.args[0]


def test_a_store_from_the_configuration_is_bounded_by_it(tmp_path):
    config = tmp_path / "inspector.conf"
    config.write_text(f"[database]\nconnection = {POSTGRESQL}\nsocket_timeout = 4\n")
    store = Store.from_conf(load_conf(["--config-file", str(config)]))
    try:
        assert store.bounds.socket == 4
        # Both pools: the transactions' and the single statements' (autocommit).
        for engine in (store.engine, store._autocommit):
            params = parameters(engine)
            assert params["tcp_user_timeout"] == 4000
            assert "statement_timeout=3000" in params["options"]
    finally:
        store.close()


def test_migrations_and_imports_have_no_statement_or_lock_timeout():
    assert schema.MIGRATION_BOUNDS.statement == 0
    assert schema.MIGRATION_BOUNDS.lock == 0
    assert schema.MIGRATION_BOUNDS.socket == Bounds().socket
    options = connect_args(make_url(POSTGRESQL), schema.MIGRATION_BOUNDS)["options"]
    assert "statement_timeout=0 " in options and "lock_timeout=0 " in options


def test_mysql_sockets_time_out_after_a_statements_run():
    args = connect_args(make_url(MYSQL), Bounds())
    assert args == {"connect_timeout": 2, "write_timeout": 3, "read_timeout": 6}
    # Without a statement limit a long statement must not be cut by the socket.
    assert "read_timeout" not in connect_args(make_url(MYSQL), Bounds().unlimited_statements())


def test_mariadb_and_mysql_name_the_statement_limit_apart():
    assert mysql_session_settings(Bounds(), mariadb=True) == {
        "max_statement_time": 3.0,
        "innodb_lock_wait_timeout": 2,
        "lock_wait_timeout": 2,
    }
    mysql = mysql_session_settings(Bounds(lock=0.2), mariadb=False)
    assert mysql == {
        "max_execution_time": 3000,
        "innodb_lock_wait_timeout": 1,  # whole seconds, at least 1
        "lock_wait_timeout": 1,
    }
    assert mysql_session_settings(Bounds().unlimited_statements(), mariadb=True) == {
        "max_statement_time": 0
    }


def test_a_pymysql_socket_gets_keepalives_and_a_user_timeout():
    class PyMySQLConnection:
        def __init__(self) -> None:
            self._sock = socket.socket()

    connection = PyMySQLConnection()
    try:
        assert internals.bound_mysql_socket(connection, 3.0, 1)
        sock = connection._sock
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 3000
    finally:
        connection._sock.close()
    assert not internals.bound_mysql_socket(object(), 3.0, 1)  # another driver's


def test_no_statement_starts_after_the_requests_deadline(store):
    clock = Clock(1000.0)
    with deadlines.bound(4.0, clock):
        assert store.node_uuids(limit=1) == []  # in time
        clock.now += 4.0
        with pytest.raises(ServiceUnavailable, match="database unavailable: no answer within"):
            store.store_data("n1", {"inventory": {}}, processed=False)
        with pytest.raises(ServiceUnavailable):
            store.get_node("n1")
    # Outside a request: no deadline, nothing refused.
    assert store.get_data("n1", processed=False) is None  # nothing was written
