"""Statements compiled once and run straight on a pooled DBAPI connection, for the hottest
paths: the API's status read and the worker's read, compare-and-swap and request
marks, where SQLAlchemy's per-execution work (a Connection, a result and its rows, and
for a statement built per call its cache key) costs more CPU than the round trip itself.

Values go through their types' bind processors and each selected column through its
result processor, so rows hold what SQLAlchemy would return. Run on an autocommit
engine, every statement is committed on its own. Driver errors leave as SQLAlchemy's
DBAPIError, for `engine.translate_errors`.
"""

from typing import Any

from sqlalchemy import Executable, Select, exc
from sqlalchemy.engine import Engine

#: What `_execute` fetches: the first row, every row (None: nothing, the row count).
FIRST = "first"
ALL = "all"


class Prepared:
    """One statement on one engine: `first(**params)` for its first row, `run(**params)`
    for the number of rows it changed."""

    def __init__(self, engine: Engine, statement: Executable) -> None:
        dialect = engine.dialect
        compiled = statement.compile(dialect=dialect)
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
        selected = statement.selected_columns if is_select else ()
        self.columns = tuple(column.name for column in selected)
        self._processors = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None) for column in selected
        )

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

    def _row(self, row, names) -> dict[str, Any]:
        if names is not None:
            return dict(zip(names, row, strict=True))
        return {
            name: value if process is None else process(value)
            for name, process, value in zip(self.columns, self._processors, row, strict=True)
        }

    def _execute(self, params: dict[str, Any], *, fetch: str | None):
        for name, process in self._binds:
            params[name] = process(params[name])
        args = params if self._order is None else tuple(params[name] for name in self._order)
        connection = None
        try:
            connection = self.engine.raw_connection()
            cursor = connection.cursor()
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

    def _wrap(self, error: Exception, connection, args) -> exc.DBAPIError:
        """SQLAlchemy's wrapper of a driver error; None connection: connecting failed."""
        dialect = self.engine.dialect
        lost = connection is not None and dialect.is_disconnect(
            error, connection.dbapi_connection, None
        )
        if lost:
            # As SQLAlchemy's Connection does: this connection and every other pooled
            # one (they predate the drop, a database restart) are reconnected on checkout.
            self.engine.pool._invalidate(connection, error)
        return exc.DBAPIError.instance(
            self._sql,
            args,
            error,
            dialect.loaded_dbapi.Error,
            connection_invalidated=lost,
            dialect=dialect,
        )
