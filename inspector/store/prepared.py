"""Reads compiled once and run straight on a pooled DBAPI connection, for the API's
hottest statement (a status read), where SQLAlchemy's per-execution work (a Connection,
a result and its rows) costs more CPU than the database round trip itself.

Values are bound as given (no bind processing: strings and numbers only); each column
goes through its type's result processor, so rows hold what SQLAlchemy would return.
Driver errors leave as SQLAlchemy's DBAPIError, for `engine.translate_errors`.
"""

from typing import Any

from sqlalchemy import Select, exc
from sqlalchemy.engine import Engine


class PreparedRead:
    """One SELECT on one engine; `first(**params)` runs it."""

    def __init__(self, engine: Engine, statement: Select) -> None:
        dialect = engine.dialect
        compiled = statement.compile(dialect=dialect)
        self.engine = engine
        self.columns = tuple(column.name for column in statement.selected_columns)
        self._sql = compiled.string
        #: The order of the parameters for a positional paramstyle (qmark, format).
        self._order = compiled.positiontup
        self._processors = tuple(
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns
        )

    def first(self, **params: Any) -> dict[str, Any] | None:
        """The first row as {column: value}; None when there is none.

        A DBAPIError whose `connection_invalidated` is set means the server had
        dropped the pooled connection: the pool is invalidated, and a retry reconnects.
        """
        args = params if self._order is None else tuple(params[name] for name in self._order)
        connection = None
        try:
            connection = self.engine.raw_connection()
            cursor = connection.cursor()
            try:
                cursor.execute(self._sql, args)
                row = cursor.fetchone()
            finally:
                cursor.close()
        except self.engine.dialect.loaded_dbapi.Error as error:
            raise self._wrap(error, connection, args) from error
        finally:
            if connection is not None:
                connection.close()
        if row is None:
            return None
        return {
            name: value if process is None else process(value)
            for name, process, value in zip(self.columns, self._processors, row, strict=True)
        }

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
