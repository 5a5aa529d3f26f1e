"""Engines from a URL (SQLite pragmas, [database] pools, the bounds on how long a server
may keep a thread waiting, read-only sources); SQLAlchemy error wrapping.

The only place that turns SQLAlchemy and driver exceptions into `inspector.errors`.
It holds no engine itself: callers build one and pass it around.
"""

import contextlib
import dataclasses
import functools
import importlib.util
import logging
import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

import sqlalchemy
from oslo_config import cfg
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Engine, make_url

from inspector import errors, redaction
from inspector.conf import database as database_opts
from inspector.store.bounds import MYSQL_DIALECTS, Bounds, bound_mysql_session, connect_args

LOG = logging.getLogger(__name__)

#: Milliseconds a SQLite connection waits for a writer before "database is locked".
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: The embedded database's file name under state_path.
SQLITE_FILE = "inspector.sqlite"
#: The isolation level of MySQL and MariaDB sessions: PostgreSQL's default, which the
#: store's transactions are written for. Under REPEATABLE READ, theirs, a transaction
#: keeps reading what it saw first, and InnoDB also locks the gaps between the index
#: records a statement searched: two transactions that write a row absent so far (the
#: first claim of a marker) deadlock instead of one meeting the other's key.
MYSQL_ISOLATION_LEVEL = "READ COMMITTED"
#: MySQL's ER_LOCK_DEADLOCK: InnoDB rolled the whole transaction back to break a
#: deadlock, and asks for it to be run again.
MYSQL_DEADLOCK = 1213


@dataclasses.dataclass(frozen=True)
class Pool:
    """A server database's connection pool (QueuePool), from oslo.db's [database]
    options. SQLite keeps SQLAlchemy's own pool, as under oslo.db.

    A pool opens connections only when a thread needs one and keeps up to `size` of them
    (0: no limit); a connection returned beyond that is closed, so a pool smaller than
    the busy threads of a process reconnects during bursts. Up to `overflow` more are
    opened at peaks (-1: no limit); a thread waits `timeout` seconds (None: SQLAlchemy's
    30) for one of a full pool, then the database counts as unavailable. A connection
    older than `recycle` seconds is replaced when next taken (-1: never).
    """

    size: int = database_opts.MAX_POOL_SIZE
    overflow: int = database_opts.MAX_OVERFLOW
    timeout: int | None = database_opts.POOL_TIMEOUT
    recycle: int = database_opts.CONNECTION_RECYCLE_TIME

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "Pool":
        group = conf.database
        return cls(
            size=group.max_pool_size,
            overflow=group.max_overflow,
            timeout=group.pool_timeout,
            recycle=group.connection_recycle_time,
        )

    def engine_args(self) -> dict[str, Any]:
        """sqlalchemy.create_engine's arguments for this pool."""
        args: dict[str, Any] = {
            "pool_size": self.size,
            "max_overflow": self.overflow,
            "pool_recycle": self.recycle,
        }
        if self.timeout is not None:
            args["pool_timeout"] = self.timeout
        return args


def default_url(state_path: str | os.PathLike[str]) -> str:
    """The embedded SQLite database under state_path; creates the directory."""
    path = os.path.abspath(os.fspath(state_path))
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise errors.ConfigError(
            f"cannot create state_path {path} for the database: {error}"
        ) from error
    return f"sqlite:///{os.path.join(path, SQLITE_FILE)}"


def database_url(conf: cfg.ConfigOpts) -> str:
    """[database]connection, or the embedded SQLite under state_path when empty."""
    return conf.database.connection or default_url(conf.state_path)


def describe(url: str | URL) -> str:
    """The URL as it may appear in logs and errors: never with its password."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except exc.ArgumentError:
        return "<invalid database URL>"


#: Drivers that ironic-inspector's URLs name or imply, with their module, and ours for
#: the same server: used when theirs is not installed here.
DRIVER_SWAPS = {
    "psycopg2": ("psycopg2", "postgresql+psycopg"),
    "mysqldb": ("MySQLdb", "mysql+pymysql"),
}


def usable_url(url: URL) -> URL:
    """url with its driver swapped for ours when it names (or implies, as
    `postgresql://` and `mysql://` do) a driver that is not installed here: an
    ironic-inspector `[database] connection` works as it is."""
    swap = DRIVER_SWAPS.get(url.get_driver_name())
    if swap is None or importlib.util.find_spec(swap[0]) is not None:
        return url
    return url.set(drivername=swap[1])


def create_engine(url: str, pool: Pool | None = None, bounds: Bounds | None = None) -> Engine:
    """An engine for url; SQLite gets WAL, foreign keys and a busy timeout, a server
    database `pool` (default: oslo.db's defaults) and `bounds` (default: the [database]
    options' defaults)."""
    try:
        parsed = usable_url(make_url(url))
        if parsed.get_backend_name() == "sqlite":
            engine = sqlalchemy.create_engine(parsed)
            event.listen(engine, "connect", _configure_sqlite)
            return engine
        return _server_engine(parsed, pool or Pool(), bounds or Bounds())
    except (exc.ArgumentError, ImportError) as error:
        raise errors.ConfigError(f"unusable database URL {describe(url)}: {error}") from error


def create_readonly_engine(url: str) -> Engine:
    """An engine that only reads url's database and writes nothing to it, not even when
    it connects: the source of an import, which another service may be using.

    SQLite opens the file read-only (a `file:` URI with `mode=ro`) and runs no pragma
    that writes (no WAL switch: that rewrites the file's header). A server's sessions are
    made read-only when they connect (SET SESSION ... READ ONLY): every transaction on
    them, reflection included, refuses to write.
    """
    try:
        parsed = usable_url(make_url(url))
        if parsed.get_backend_name() == "sqlite":
            engine = sqlalchemy.create_engine(_readonly_sqlite_url(parsed))
            event.listen(engine, "connect", _configure_readonly_sqlite)
            return engine
        engine = _server_engine(parsed, Pool(), Bounds().unlimited_statements())
    except (exc.ArgumentError, ImportError) as error:
        raise errors.ConfigError(f"unusable database URL {describe(url)}: {error}") from error
    statement = _READ_ONLY_SESSION.get(parsed.get_backend_name())
    if statement is None:
        engine.dispose()
        raise errors.ConfigError(
            f"database URL {describe(url)}: cannot open a {parsed.get_backend_name()} "
            "database read-only"
        )
    event.listen(engine, "connect", functools.partial(_read_only_session, statement))
    return engine


#: The statement that makes every later transaction of a session read-only.
_READ_ONLY_SESSION = {
    "postgresql": "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    "mysql": "SET SESSION TRANSACTION READ ONLY",
    "mariadb": "SET SESSION TRANSACTION READ ONLY",
}


def _readonly_sqlite_url(url: URL) -> URL:
    """url as a read-only `file:` URI (its path quoted: SQLite decodes %XX in URIs)."""
    database = url.database or ""
    uri = url.query.get("uri", "")
    if not isinstance(uri, str) or uri.lower() not in ("true", "1"):
        database = "file:" + urllib.parse.quote(database)
    return url.set(database=database).update_query_dict({"mode": "ro", "uri": "true"})


def _configure_readonly_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Waiting for a writer (a live ironic-inspector) is a setting of this connection only.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS:d}")
    finally:
        cursor.close()


def _read_only_session(statement: str, dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(statement)
    finally:
        cursor.close()
    # Committed: a session setting made inside a transaction that is rolled back (the
    # pool's reset) would be undone with it.
    dbapi_connection.commit()


def create_autocommit_engine(
    engine: Engine, pool: Pool | None = None, bounds: Bounds | None = None
) -> Engine:
    """An engine on the same database whose connections stay in autocommit: for single
    statements (reads, one-statement writes), each committed on its own.

    On a server database it has a pool of its own (`pool`, sized as the engine's), so
    that its connections are never switched in and out of autocommit and need no
    rollback when returned: that saves round trips on every checkout and return. The
    prepared statements (prepared.Prepared, the libpq fast path included) run on
    connections of this pool. SQLite shares the engine's pool.
    """
    if engine.dialect.name == "sqlite":
        return engine.execution_options(isolation_level="AUTOCOMMIT")
    return _server_engine(
        engine.url,
        pool or Pool(),
        bounds or Bounds(),
        isolation_level="AUTOCOMMIT",
        pool_reset_on_return=None,
    )


def _server_engine(url: URL, pool: Pool, bounds: Bounds, **options: Any) -> Engine:
    mysql = url.get_backend_name() in MYSQL_DIALECTS
    if mysql:
        options.setdefault("isolation_level", MYSQL_ISOLATION_LEVEL)
    engine = sqlalchemy.create_engine(
        # No pre-ping: it doubles the round trips of every read. A connection the
        # server dropped fails once; the pool is then invalidated and the Store
        # retries that read on a fresh connection.
        url,
        connect_args=connect_args(url, bounds),
        **pool.engine_args(),
        **options,
    )
    if mysql:
        event.listen(engine, "connect", functools.partial(bound_mysql_session, bounds))
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Per connection: foreign_keys and busy_timeout do not persist in the file,
    # and WAL lets readers proceed while a worker writes.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS:d}")
    finally:
        cursor.close()


def is_deadlock(engine: Engine, error: exc.DBAPIError) -> bool:
    """Whether MySQL or MariaDB rolled the transaction back to break a deadlock: nothing
    of it was kept, it may run again."""
    if engine.dialect.name not in MYSQL_DIALECTS:
        return False
    args: tuple[object, ...] = getattr(error.orig, "args", ())
    return bool(args) and args[0] == MYSQL_DEADLOCK


@contextlib.contextmanager
def translate_errors(engine: Engine) -> Iterator[None]:
    """Re-raise SQLAlchemy errors from the block as `inspector.errors`."""
    try:
        yield
    except exc.IntegrityError as error:
        raise errors.Conflict(
            f"database {describe(engine.url)} refused the change: {_reason(error, engine.url)}"
        ) from error
    except (exc.DBAPIError, exc.TimeoutError) as error:
        # The details (URL, host, driver message) go to the log only: the message
        # may reach unauthenticated API callers.
        LOG.warning("database %s unavailable: %s", describe(engine.url), _reason(error, engine.url))
        raise errors.ServiceUnavailable(
            "the database is unavailable", service="database"
        ) from error
    except exc.SQLAlchemyError as error:
        raise errors.InspectorError(
            f"database {describe(engine.url)}: {_reason(error, engine.url)}"
        ) from error


def _reason(error: exc.SQLAlchemyError, url: URL) -> str:
    # The driver's message only: SQLAlchemy's own text carries the statement and
    # its parameters, which may hold introspection data.
    original = getattr(error, "orig", None)
    text = str(original if original is not None else error).strip()
    reason = text.splitlines()[0] if text else type(error).__name__
    return redaction.mask_secrets(reason, [url.password])
