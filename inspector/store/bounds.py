"""The bounds on how long a server database may keep a thread waiting, from the
[database] options, as each driver takes them: libpq's connection parameters and server
settings, PyMySQL's socket timeouts and MySQL's or MariaDB's session variables.

Owns no engine: `engine` passes these to SQLAlchemy when it builds one.
"""

import dataclasses
import math
from typing import Any

from oslo_config import cfg
from sqlalchemy.engine import URL

from inspector.conf import database as database_opts
from inspector.store import internals

#: SQLAlchemy's names of MySQL and MariaDB (a mysql:// URL on MariaDB is "mysql").
MYSQL_DIALECTS = ("mysql", "mariadb")
#: Drivers on libpq, which take its connection parameters (keepalives, TCP user
#: timeout, `options`: server settings sent in the start-up packet).
_LIBPQ_DRIVERS = ("psycopg", "psycopg2")
#: Drivers that take read_timeout and write_timeout.
_MYSQL_TIMEOUT_DRIVERS = ("pymysql", "mysqldb")
#: Seconds of silence on a connection before the first TCP keepalive probe, then between
#: two probes: a server that stopped answering is noticed while a statement waits for
#: its answer (the TCP user timeout ends the connection once probes go unanswered for
#: `Bounds.socket` seconds).
KEEPALIVE_IDLE = 1
KEEPALIVE_INTERVAL = 1


@dataclasses.dataclass(frozen=True)
class Bounds:
    """How long a server database may keep a thread waiting, from the [database] options
    (seconds; 0: no limit): to accept a connection (`connect`), to acknowledge what was
    sent or answer keepalive probes (`socket`: a server that stopped answering), to run
    one statement (`statement`) or wait for a lock (`lock`), and PostgreSQL's idle
    transaction (`idle_in_transaction`: the session of a frozen process is ended). A
    connection URL that sets a driver parameter of its own keeps it. SQLite has none.
    """

    connect: int = database_opts.CONNECT_TIMEOUT
    socket: float = database_opts.SOCKET_TIMEOUT
    statement: float = database_opts.STATEMENT_TIMEOUT
    lock: float = database_opts.LOCK_TIMEOUT
    idle_in_transaction: float = database_opts.IDLE_IN_TRANSACTION_TIMEOUT

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "Bounds":
        group = conf.database
        return cls(
            connect=group.connect_timeout,
            socket=group.socket_timeout,
            statement=group.statement_timeout,
            lock=group.lock_timeout,
            idle_in_transaction=group.idle_in_transaction_timeout,
        )

    def unlimited_statements(self) -> "Bounds":
        """These bounds without the statement and lock timeouts: for schema migrations
        and the import, whose statements may run long on a large database."""
        return dataclasses.replace(self, statement=0, lock=0)


def connect_args(url: URL, bounds: Bounds) -> dict[str, Any]:
    """The driver's connection parameters for `bounds`; those the URL sets stay its own."""
    backend, driver = url.get_backend_name(), url.get_driver_name()
    args: dict[str, Any] = {}
    if backend in ("postgresql", *MYSQL_DIALECTS):
        args["connect_timeout"] = bounds.connect
    if backend == "postgresql" and driver in _LIBPQ_DRIVERS:
        args.update(
            keepalives=1,
            keepalives_idle=KEEPALIVE_IDLE,
            keepalives_interval=KEEPALIVE_INTERVAL,
            keepalives_count=max(1, math.ceil(bounds.socket / KEEPALIVE_INTERVAL)),
            tcp_user_timeout=_milliseconds(bounds.socket),
            options=_server_settings(bounds, url.query.get("options")),
        )
    if backend in MYSQL_DIALECTS and driver in _MYSQL_TIMEOUT_DRIVERS:
        # The socket's own timeouts: an answer may take a statement's run first.
        args["write_timeout"] = math.ceil(bounds.socket)
        if bounds.statement:
            args["read_timeout"] = math.ceil(bounds.statement + bounds.socket)
    return {
        name: value for name, value in args.items() if name == "options" or name not in url.query
    }


def _milliseconds(seconds: float) -> int:
    return round(seconds * 1000)


def _server_settings(bounds: Bounds, url_options: Any) -> str:
    """libpq's `options`: the PostgreSQL settings of `bounds`, sent in the start-up
    packet (no round trip of their own), then the URL's own, which win."""
    settings = {
        "statement_timeout": bounds.statement,
        "lock_timeout": bounds.lock,
        "idle_in_transaction_session_timeout": bounds.idle_in_transaction,
    }
    ours = " ".join(f"-c {name}={_milliseconds(value)}" for name, value in settings.items())
    if isinstance(url_options, tuple):  # the URL gave it several times
        url_options = " ".join(url_options)
    return f"{ours} {url_options}" if url_options else ours


def mysql_session_settings(bounds: Bounds, mariadb: bool) -> dict[str, int | float]:
    """The session variables of `bounds` on MariaDB or MySQL (0: no limit)."""
    settings: dict[str, int | float] = {}
    if mariadb:
        settings["max_statement_time"] = bounds.statement  # seconds; 0: none
    else:
        settings["max_execution_time"] = _milliseconds(bounds.statement)  # SELECTs only
    if bounds.lock:
        lock = max(1, math.ceil(bounds.lock))
        settings["innodb_lock_wait_timeout"] = lock  # row locks
        settings["lock_wait_timeout"] = lock  # metadata locks (DDL)
    return settings


def bound_mysql_session(bounds: Bounds, dbapi_connection: Any, _record: Any) -> None:
    # One round trip per new connection (pooled ones keep their session). Which server
    # it is shows only once connected: MariaDB and MySQL name the statement limit apart.
    mariadb = "mariadb" in str(dbapi_connection.get_server_info()).lower()
    settings = mysql_session_settings(bounds, mariadb)
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(
            "SET SESSION " + ", ".join(f"{name} = {value}" for name, value in settings.items())
        )
    finally:
        cursor.close()
    internals.bound_mysql_socket(dbapi_connection, bounds.socket, KEEPALIVE_IDLE)
