"""Statements compiled once and run straight on a pooled DBAPI connection, for the hottest
paths: the API's status read and the worker's read, compare-and-swap and request
marks, where SQLAlchemy's per-execution work (a Connection, a result and its rows, and
for a statement built per call its cache key) costs more CPU than the round trip itself.

Values go through their types' bind processors and each selected column through its
result processor, so rows hold what SQLAlchemy would return. Run on an autocommit
engine, every statement is committed on its own. Driver errors leave as SQLAlchemy's
DBAPIError, for `engine.translate_errors`.
"""

import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast, overload

from sqlalchemy import ClauseElement, Select, exc
from sqlalchemy.engine import Engine
from sqlalchemy.engine.interfaces import DBAPIModule
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.compiler import SQLCompiler

from inspector.store import internals

try:
    from psycopg import pq
except ImportError:  # psycopg is the `postgresql` extra: Libpq is only made on it
    pass

if TYPE_CHECKING:
    import psycopg

#: What `_execute` fetches: the first row, every row (None: nothing, the row count).
FIRST = "first"
ALL = "all"

#: What a fetch answers: the rows, and their column names when the statement does not
#: name its columns.
_Rows = tuple[Sequence[Sequence[Any]], list[str] | None]


class Prepared:
    """One statement on one engine: `first(**params)` for its first row, `run(**params)`
    for the number of rows it changed."""

    def __init__(self, engine: Engine, statement: ClauseElement) -> None:
        dialect = engine.dialect
        # DML and SELECT statements compile to a SQLCompiler.
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
        self.engine = engine
        constants = [name for name, bind in compiled.binds.items() if bind.value is not None]
        if constants:
            # Only the caller's parameters are sent: a value in the statement would be lost.
            raise ValueError(f"write constants into the statement, not as {constants}")
        self._sql = compiled.string
        #: The order of the parameters for a positional paramstyle (qmark, format).
        self._order = compiled.positiontup
        self._binds = tuple(
            (name, processor)
            for name, bind in compiled.binds.items()
            if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        )
        is_select = isinstance(statement, Select)
        #: A write is committed at once: the raw connection of a SQLite engine is not in
        #: autocommit (on a server database this costs no round trip).
        self._commits = not is_select
        selected = statement.selected_columns if isinstance(statement, Select) else ()
        self.columns = tuple(column.name for column in selected)
        self._processors = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in selected
        )
        #: On psycopg, the statement goes straight to libpq (see Libpq).
        self._libpq = Libpq(self._sql) if dialect.driver == "psycopg" and not self._order else None

    def first(self, **params: Any) -> dict[str, Any] | None:
        """The first row as {column: value}; None when there is none.

        A DBAPIError whose `connection_invalidated` is set means the server had
        dropped the pooled connection: the pool is invalidated, and a retry reconnects.
        """
        rows, names = self._execute(params, fetch=FIRST)
        return self._row(rows[0], names) if rows else None

    def all(self, **params: Any) -> list[dict[str, Any]]:
        """Every row, as `first` answers one."""
        rows, names = self._execute(params, fetch=ALL)
        return [self._row(row, names) for row in rows]

    def run(self, **params: Any) -> int:
        """Execute it; the number of rows it changed."""
        return self._execute(params, fetch=None)[0]

    def _row(self, row: Sequence[Any], names: list[str] | None) -> dict[str, Any]:
        if names is not None:
            return dict(zip(names, row, strict=True))
        return {
            name: value if process is None else process(value)
            for name, process, value in zip(self.columns, self._processors, row, strict=True)
        }

    @overload
    def _execute(self, params: dict[str, Any], *, fetch: None) -> tuple[int, None]: ...
    @overload
    def _execute(self, params: dict[str, Any], *, fetch: str) -> _Rows: ...
    def _execute(self, params: dict[str, Any], *, fetch: str | None) -> tuple[int, None] | _Rows:
        for name, process in self._binds:
            params[name] = process(params[name])
        args = params if self._order is None else tuple(params[name] for name in self._order)
        connection = None
        try:
            connection = self.engine.raw_connection()
            if self._libpq is not None:  # (only made without positional parameters)
                return self._libpq.execute(connection, params, fetch=fetch, named=not self.columns)
            cursor = connection.cursor()
            result: tuple[int, None] | _Rows
            try:
                cursor.execute(self._sql, args)
                if fetch is None:
                    result = (cursor.rowcount, None)
                else:
                    rows = cursor.fetchmany(1) if fetch is FIRST else cursor.fetchall()
                    # The driver builds the description on each use: only when the
                    # statement does not name its columns (a RETURNING written as text).
                    names = None if self.columns else [c[0] for c in cursor.description]
                    result = (rows, names)
            finally:
                cursor.close()
            if self._commits:
                connection.commit()
            return result
        except self.engine.dialect.loaded_dbapi.Error as error:
            raise self._wrap(error, connection, args) from error
        finally:
            if connection is not None:
                connection.close()

    def _wrap(
        self,
        error: DBAPIModule.Error,
        connection: PoolProxiedConnection | None,
        args: dict[str, Any] | tuple[Any, ...],
    ) -> exc.StatementError:
        """SQLAlchemy's wrapper of a driver error (a DBAPIError); None connection:
        connecting failed."""
        dialect = self.engine.dialect
        lost = connection is not None and dialect.is_disconnect(
            error, connection.dbapi_connection, None
        )
        if lost:
            internals.invalidate(self.engine, connection, error)
        return exc.DBAPIError.instance(
            self._sql,
            args,
            error,
            dialect.loaded_dbapi.Error,
            connection_invalidated=lost,
            dialect=dialect,
        )


#: SQLSTATE of "prepared statement ... does not exist".
UNKNOWN_STATEMENT = b"26000"
#: A pyformat parameter, or an escaped percent sign, in a statement compiled for psycopg.
_PYFORMAT = re.compile(r"%\((\w+)\)s|%%")


class Libpq:
    """One statement run through libpq itself (psycopg's `pgconn`), on psycopg: prepared
    once per connection under a name of its own, then each call is one
    `PQexecPrepared`, which releases the GIL while it waits. psycopg's cursor does the
    same round trip through a generator-driven loop that costs more CPU than the round
    trip (a status read's statement: about 79 us of CPU through the cursor, 50 here).
    Values are adapted by psycopg's own Transformer, so rows hold what its cursor
    returns. A statement the server no longer knows (DEALLOCATE, DISCARD ALL) is
    prepared again. (psycopg prepares a statement after 5 executions too: behind
    PgBouncer in transaction mode, which needs `max_prepared_statements`, this is
    nothing new.)"""

    __slots__ = ("_name", "_names", "_sql", "_statements")

    #: Keys of the pooled connection's `info`: its Transformer, and the names of the
    #: statements prepared on it.
    TRANSFORMER = "inspector.libpq.transformer"
    PREPARED = "inspector.libpq.prepared"

    def __init__(self, sql: str) -> None:
        names: list[str] = []

        def number(match: re.Match) -> str:
            name = match.group(1)
            if name is None:
                return "%"
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        self._sql = _PYFORMAT.sub(number, sql).encode()
        self._names = tuple(names)
        self._name = f"inspector_{uuid.uuid4().hex[:16]}"
        #: The statement's name for each tuple of parameter types: parameters of other
        #: types (a None where a value was) make another statement.
        self._statements: dict[tuple[int, ...], bytes] = {}

    @overload
    def execute(
        self, connection: PoolProxiedConnection, params: dict[str, Any], *, fetch: None, named: bool
    ) -> tuple[int, None]: ...
    @overload
    def execute(
        self, connection: PoolProxiedConnection, params: dict[str, Any], *, fetch: str, named: bool
    ) -> _Rows: ...
    def execute(
        self,
        connection: PoolProxiedConnection,
        params: dict[str, Any],
        *,
        fetch: str | None,
        named: bool,
    ) -> tuple[int, None] | _Rows:
        """What Prepared._execute answers: (rowcount, None), or (rows, column names
        when `named`)."""
        info = connection.info
        transformer = info.get(self.TRANSFORMER)
        if transformer is None:
            transformer = info[self.TRANSFORMER] = internals.transformer(
                connection.dbapi_connection
            )
            info[self.PREPARED] = set()
        values, types, formats = internals.dump(transformer, [params[name] for name in self._names])
        name = self._statements.get(types)
        if name is None:
            name = f"{self._name}_{'_'.join(map(str, types))}".encode()
            self._statements[types] = name
        pgconn = cast("psycopg.Connection[Any]", connection.dbapi_connection).pgconn
        prepared = info[self.PREPARED]
        for attempt in (1, 2):
            if name not in prepared:
                _check(pgconn.prepare(name, self._sql, types))
                prepared.add(name)
            result = pgconn.exec_prepared(name, values, formats)
            if attempt == 1 and _forgotten(result):
                prepared.clear()  # the server forgot every one of them: prepare again
                continue
            break
        _check(result)
        if fetch is None:
            return int(result.command_tuples or 0), None
        count = min(1, result.ntuples) if fetch is FIRST else result.ntuples
        rows = internals.load_rows(transformer, result, count)
        names = (
            [(result.fname(i) or b"").decode() for i in range(result.nfields)] if named else None
        )
        return rows, names


def _forgotten(result: "pq.abc.PGresult") -> bool:
    """Whether the server no longer knew the statement (looked at on failure only)."""
    return (
        result.status == pq.ExecStatus.FATAL_ERROR
        and result.error_field(pq.DiagnosticField.SQLSTATE) == UNKNOWN_STATEMENT
    )


def _check(result: "pq.abc.PGresult") -> None:
    """Raise the psycopg error of a failed result, as its cursor would."""
    if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
        raise internals.error_from_result(result)
