"""What `inspector status` reads from the database: the census (nodes per state, leaders,
the last run of each periodic task, the notification backlog) and the firewall's leader.

A SQLite database (the embedded one, or a sqlite:/// URL) is read with the standard
library's sqlite3, read-only, in four SELECTs: SQLAlchemy and the store cost about 0.5 s
of CPU to import and set up, most of the command's time (docs/performance.md). Any other
database, and any failure of that read, goes through the store as every other reader
does: the same answer, and the same message when it fails. The SELECTs are the store's
(inspector.store.census), in SQL: tests/unit/test_status_read.py compares their results
with the store's on the same database.
"""

import os
import sqlite3
import urllib.parse
from datetime import datetime
from typing import TYPE_CHECKING

from oslo_config import cfg

from inspector.census import Census

if TYPE_CHECKING:
    from inspector.store import Store

#: inspector.store.engine's: the embedded database's file under state_path, and how long
#: a reader waits for a writer (tests/unit/test_status_read.py compares them).
SQLITE_FILE = "inspector.sqlite"
SQLITE_BUSY_TIMEOUT_S = 30.0

#: The census's statements, as inspector.store.census and outbox run them.
NODES = "SELECT state, count(*) FROM nodes GROUP BY state"
LEADERS = "SELECT name, holder, term, at FROM markers WHERE name LIKE 'leader:%'"
LAST_RUNS = (
    "SELECT task_runs.task, task_runs.started_at, task_runs.finished_at, task_runs.outcome "
    "FROM task_runs JOIN (SELECT task, max(id) AS id FROM task_runs GROUP BY task) AS latest "
    "ON task_runs.id = latest.id"
)
PENDING = "SELECT count(*) FROM notifications WHERE delivered_at IS NULL"


class Database:
    """The census and the leaders of conf's database: through sqlite3 where it can, else
    (or when that fails) through the store, opened as `inspector status` always opened it
    (a ConfigError of the store's, an unusable URL, leaves from here)."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.path = sqlite_path(conf.database.connection, conf.state_path)
        self._census: Census | None = None
        self._store: Store | None = None
        if self.path is not None:
            try:
                self._census = read(self.path)
            except (sqlite3.Error, ValueError):
                self.path = None  # the store says what is wrong, as it always did
        if self.path is None:
            self._open_store()

    def _open_store(self) -> "Store":
        from inspector import store  # noqa: PLC0415 - a server database, or a failure

        self._store = store.Store.from_conf(self.conf)
        return self._store

    def census(self) -> Census:
        """InspectorError when the database cannot say."""
        if self._store is not None:
            return self._store.census()
        assert self._census is not None  # read in __init__, else the store is open
        return self._census

    def leader(self, kind: str) -> tuple[str, int, datetime] | None:
        """The singleton `kind`'s recorded leader, read now: (holder, term, since), None
        if there never was one; InspectorError when the database cannot say."""
        if self._store is None and self.path is not None:
            try:
                return read(self.path).leaders.get(kind)
            except (sqlite3.Error, ValueError):
                self.path = None
        mark = (self._store or self._open_store()).leadership(kind)
        return None if mark is None else (mark.holder, mark.term, mark.at)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def sqlite_path(connection: str | None, state_path: str) -> str | None:
    """The file of a SQLite database that sqlite3 can open as it is: the embedded one
    (no [database] connection) or a plain sqlite:///PATH; None for any other URL (a
    server, a query string, an in-memory database), which the store reads."""
    if not connection:
        return os.path.join(os.path.abspath(state_path), SQLITE_FILE)
    scheme, separator, path = connection.partition(":///")
    if scheme != "sqlite" or not separator or not path or "?" in path:
        return None
    return path


def read(path: str) -> Census:
    """The census of the SQLite database at path, opened read-only (a missing file is
    an error, never an empty database created here)."""
    uri = f"file:{urllib.parse.quote(path)}?mode=ro"
    connection = sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_S)
    try:
        states = {state: count for state, count in connection.execute(NODES)}
        leaders = {
            name.split(":", 1)[1]: (holder, term, _timestamp(at))
            for name, holder, term, at in connection.execute(LEADERS)
        }
        runs = {
            task: (_timestamp(started), None if finished is None else _timestamp(finished), outcome)
            for task, started, finished, outcome in connection.execute(LAST_RUNS)
        }
        (pending,) = connection.execute(PENDING).fetchone()
    finally:
        connection.close()
    return Census(states, leaders, runs, pending)


def _timestamp(text: str) -> datetime:
    """SQLAlchemy's SQLite text of a naive UTC datetime, as the datetime."""
    return datetime.fromisoformat(text)
