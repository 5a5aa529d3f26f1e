"""Reading an ironic-inspector database (its final schema, ironic-inspector 12.x) as plain
records, for the importer. Read only: it opens that database read-only (see
`engine.create_readonly_engine`) and never writes to it, and nothing in it knows our own
tables.
"""

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Executable,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    inspect,
    select,
)
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine

from inspector import errors, redaction
from inspector.store import engine as engines

#: ironic-inspector's alembic revisions, oldest first. The last ("Added 'scope' column to
#: 'Rules' table") is its final schema: no later release changed it.
REVISIONS = (
    "578f84f38d",
    "d588418040d",
    "e169a4a81d88",
    "d2e48801c8ef",
    "d00d6e3f38c4",
    "882b2d84cb1b",
    "18440d0834af",
    "2970d2d44edc",
    "bf8dec16023c",
    "b55109d5063a",
)
FINAL_REVISION = REVISIONS[-1]

_META = MetaData()
NODES = Table(
    "nodes",
    _META,
    Column("uuid", String(36), primary_key=True),
    Column("state", String(32)),
    Column("started_at", DateTime),
    Column("finished_at", DateTime),
    Column("error", Text),
    Column("manage_boot", Boolean),
)
ATTRIBUTES = Table(
    "attributes",
    _META,
    Column("uuid", String(36), primary_key=True),
    Column("node_uuid", String(36)),
    Column("name", String(255)),
    Column("value", String(255)),
)
RULES = Table(
    "rules",
    _META,
    Column("uuid", String(36), primary_key=True),
    Column("created_at", DateTime),
    Column("description", Text),
    Column("disabled", Boolean),
    Column("scope", String(255)),
)
CONDITIONS = Table(
    "rule_conditions",
    _META,
    Column("id", Integer, primary_key=True),
    Column("rule", String(36)),
    Column("op", String(255)),
    Column("multiple", String(255)),
    Column("invert", Boolean),
    Column("field", Text),
    Column("params", Text),
)
ACTIONS = Table(
    "rule_actions",
    _META,
    Column("id", Integer, primary_key=True),
    Column("rule", String(36)),
    Column("action", String(255)),
    Column("params", Text),
)
DATA = Table(
    "introspection_data",
    _META,
    Column("uuid", String(36), primary_key=True),
    Column("processed", Boolean, primary_key=True),
    Column("data", Text),
)
#: What the importer reads, table by table: a database without them is not a source.
REQUIRED = {table.name: {column.name for column in table.columns} for table in _META.sorted_tables}


class SourceUnusable(errors.BadRequest):
    """The source database cannot be reached, or is not an ironic-inspector database."""


@dataclasses.dataclass(frozen=True)
class SourceNode:
    """A row of ironic-inspector's `nodes` table (version_id is unused upstream)."""

    uuid: str
    state: str
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    manage_boot: bool | None


@dataclasses.dataclass(frozen=True)
class SourceRule:
    """A rule with its conditions and actions in creation (id) order, in the API's shape."""

    uuid: str
    created_at: datetime | None
    description: str | None
    scope: str | None
    disabled: bool
    conditions: list[dict[str, Any]]
    actions: list[dict[str, Any]]

    def document(self) -> dict[str, Any]:
        """The rule as POST /v1/rules would have received it."""
        return {
            "uuid": self.uuid,
            "description": self.description,
            "scope": self.scope,
            "conditions": self.conditions,
            "actions": self.actions,
        }


class Source:
    """An open, checked ironic-inspector database; `close` when done."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.name = engines.describe(url)
        self._engine: Engine = engines.create_readonly_engine(url)
        try:
            self._check()
        except BaseException:
            self._engine.dispose()
            raise

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection; a driver error (unreachable, refused, no such table...) leaves as
        SourceUnusable with the driver's reason."""
        try:
            with self._engine.connect() as connection:
                yield connection
        except sa_exc.SQLAlchemyError as error:
            raise SourceUnusable(
                f"cannot read the ironic-inspector database {self.name}: "
                f"{_reason(error, self._engine)}"
            ) from error

    def _check(self) -> None:
        with self._reading() as connection:
            tables = set(inspect(connection).get_table_names())
            missing = sorted(set(REQUIRED) - tables)
            if missing:
                raise SourceUnusable(
                    f"{self.name} is not an ironic-inspector database: "
                    f"no table {', '.join(missing)}"
                )
            self._check_revision(connection, tables)
            self._check_columns(connection)

    def _check_columns(self, connection: Connection) -> None:
        inspector = inspect(connection)
        for table, wanted in REQUIRED.items():
            present = {column["name"] for column in inspector.get_columns(table)}
            if wanted - present:
                raise SourceUnusable(
                    f"{self.name} is not an ironic-inspector database of the final schema: "
                    f"table {table} lacks {', '.join(sorted(wanted - present))}"
                )

    def _check_revision(self, connection: Connection, tables: set[str]) -> None:
        if "alembic_version" not in tables:
            raise SourceUnusable(
                f"{self.name} is not an ironic-inspector database: no alembic_version table"
            )
        revisions = list(connection.exec_driver_sql("SELECT version_num FROM alembic_version"))
        revision = revisions[0][0] if len(revisions) == 1 else None
        if revision not in REVISIONS:
            raise SourceUnusable(
                f"{self.name} is not an ironic-inspector database: its schema revision "
                f"{revision or 'none'} is not one of ironic-inspector's"
            )
        if revision != FINAL_REVISION:
            raise SourceUnusable(
                f"{self.name} is at schema revision {revision or 'none'}, not ironic-inspector's "
                f"final {FINAL_REVISION}: run `ironic-inspector-dbsync upgrade` with "
                "ironic-inspector first"
            )

    def _rows(self, statement: Executable) -> list[Any]:
        with self._reading() as connection:
            return list(connection.execute(statement))

    def nodes(self) -> list[SourceNode]:
        rows = self._rows(select(NODES).order_by(NODES.c.uuid))
        return [SourceNode(**row._mapping) for row in rows]

    def attributes(self) -> dict[str, dict[str, set[str]]]:
        """node uuid -> attribute name -> values (rows without a node or value dropped)."""
        result: dict[str, dict[str, set[str]]] = {}
        statement = select(ATTRIBUTES.c.node_uuid, ATTRIBUTES.c.name, ATTRIBUTES.c.value)
        for node_uuid, name, value in self._rows(statement):
            if node_uuid and name and value:
                result.setdefault(node_uuid, {}).setdefault(name, set()).add(value)
        return result

    def data(self, node_uuid: str) -> dict[bool, dict[str, Any]]:
        """processed flag -> the stored document, for one node (documents are large)."""
        statement = select(DATA.c.processed, DATA.c.data).where(DATA.c.uuid == node_uuid)
        return {
            bool(processed): _json(text, f"introspection data of node {node_uuid}")
            for processed, text in self._rows(statement)
            if text is not None
        }

    def rules(self) -> list[SourceRule]:
        """Every rule, oldest first, as ironic-inspector evaluates them."""
        conditions: dict[str, list[dict[str, Any]]] = {}
        for row in self._rows(select(CONDITIONS).order_by(CONDITIONS.c.id)):
            params = _json(row.params, f"condition {row.id}") if row.params else {}
            conditions.setdefault(row.rule, []).append(
                {
                    **params,
                    "op": row.op,
                    "field": row.field,
                    "multiple": row.multiple,
                    "invert": bool(row.invert),
                }
            )
        actions: dict[str, list[dict[str, Any]]] = {}
        for row in self._rows(select(ACTIONS).order_by(ACTIONS.c.id)):
            params = _json(row.params, f"action {row.id}") if row.params else {}
            actions.setdefault(row.rule, []).append({**params, "action": row.action})
        rows = self._rows(select(RULES).order_by(RULES.c.created_at, RULES.c.uuid))
        return [
            SourceRule(
                uuid=row.uuid,
                created_at=row.created_at,
                description=row.description,
                scope=row.scope,
                disabled=bool(row.disabled),
                conditions=conditions.get(row.uuid, []),
                actions=actions.get(row.uuid, []),
            )
            for row in rows
        ]


def _json(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SourceUnusable(f"{what} is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise SourceUnusable(f"{what} is not a JSON object")
    return value


def _reason(error: sa_exc.SQLAlchemyError, engine: Engine) -> str:
    """The driver's first line, without the password: SQLAlchemy's own text carries the
    statement and its parameters."""
    original = getattr(error, "orig", None)
    text = str(original if original is not None else error).strip()
    reason = text.splitlines()[0] if text else type(error).__name__
    return redaction.mask_secrets(reason, [engine.url.password])
