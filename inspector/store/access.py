"""Connections to one database, for the Store: its engine and the autocommit twin, sessions,
reads retried once after a dropped connection, transactions run again after a deadlock.

Every SQLAlchemy error leaves as an InspectorError (`engine.translate_errors`). Within an
API request, no statement (nor retry) starts once the request's deadline has passed
(inspector.deadlines): each is refused as the database unavailable instead. Every
statement and transaction, its retries included, is one call to the database for
inspector.backend_time (`_guarded`).
"""

import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import ClauseElement
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from inspector import backend_time, deadlines
from inspector.store import engine as engines
from inspector.store.prepared import Prepared

_T = TypeVar("_T")
_P = ParamSpec("_P")


LOG = logging.getLogger(__name__)

Clock = Callable[[], datetime]

#: Runs of a transaction that MySQL or MariaDB rolled back to break a deadlock: two
#: transactions that each wait on rows the other holds (on a small table InnoDB scans
#: it to delete one node's attributes, and waits on rows another node's transaction
#: wrote); InnoDB ends one, the other goes on.
DEADLOCK_ATTEMPTS = 3


def utcnow() -> datetime:
    """Naive UTC, as every timestamp column stores it."""
    return datetime.now(UTC).replace(tzinfo=None)


class Access:
    """One engine, its sessions and its autocommit pool; no query of its own."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        pool: engines.Pool | None = None,
        bounds: engines.Bounds | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.bounds = bounds or engines.Bounds()
        self._sessions = sessionmaker(bind=engine, expire_on_commit=False)
        #: The autocommit engine's pool is sized as the engine's (`pool`), and bounded
        #: as it is.
        self._autocommit = engines.create_autocommit_engine(engine, pool, self.bounds)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({engines.describe(self.engine.url)})"

    def prepare(self, statement: ClauseElement) -> Prepared:
        """`statement` compiled once, run in autocommit (each run committed on its own)."""
        return Prepared(self._autocommit, statement)

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block succeeds, rolled back otherwise.

        For this package's query modules; ORM objects must not leave the block.
        """
        with self._guarded(), self._sessions.begin() as session:
            yield session

    def _read(
        self, query: Callable[Concatenate[Connection, _P], _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """Run a read outside a transaction; once more when the server had dropped the
        pooled connection (a database restart), so that no caller sees that."""

        def run() -> _T:
            with self._autocommit.connect() as connection:
                return query(connection, *args, **kwargs)

        return self._retried(run)

    def _retried(self, read: Callable[[], _T]) -> _T:
        with self._guarded():
            for attempt in (1, 2):
                try:
                    return read()
                except DBAPIError as error:
                    if attempt == 2 or not error.connection_invalidated:
                        raise
                    deadlines.check("database")  # a retry starts in time, or not at all
        raise AssertionError("unreachable")

    @contextlib.contextmanager
    def _guarded(self) -> Iterator[None]:
        """The block's SQLAlchemy errors as InspectorErrors; refused at once when the
        current request's deadline has passed. The block is one call to the database
        (inspector.backend_time): every statement and transaction passes here."""
        deadlines.check("database")
        with backend_time.timing(backend_time.DATABASE), engines.translate_errors(self.engine):
            yield

    def _run(self, statement: Prepared, **params: Any) -> int:
        """A one-statement write in autocommit; the number of rows it changed."""
        with self._guarded():
            return statement.run(**params)

    def _first(self, statement: Prepared, **params: Any) -> dict[str, Any] | None:
        """A one-statement write in autocommit; the first row it returned."""
        with self._guarded():
            return statement.first(**params)

    def _write(
        self, query: Callable[Concatenate[Connection, _P], _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        return self._transaction(lambda connection: query(connection, *args, **kwargs))

    def _transaction(self, work: Callable[[Connection], _T]) -> _T:
        """work(connection) in a transaction, committed; run again when MySQL or MariaDB
        ended it to break a deadlock (it was rolled back: nothing of it was kept)."""
        with self._guarded():
            for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
                try:
                    with self.engine.begin() as connection:
                        return work(connection)
                except DBAPIError as error:
                    if attempt == DEADLOCK_ATTEMPTS or not engines.is_deadlock(self.engine, error):
                        raise
                    LOG.info("Database deadlock: the transaction runs again (%s)", error.orig)
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the pooled connections; the store can still open new ones."""
        self._autocommit.dispose()
        self.engine.dispose()

    dispose = close

    def ping(self) -> None:
        """One round trip to the database (health check); ServiceUnavailable if down."""
        with self._guarded(), self._autocommit.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
