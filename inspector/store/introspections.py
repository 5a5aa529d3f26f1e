"""Queries of the introspection history: each ended introspection of a node with its raw
and processed data, newest first, pruned to [processing] history_keep per node.

Core statements on a caller's connection; rows leave as frozen records, data as parsed
JSON. A node's entry is keyed by its introspection's start, so that recording it again
(a redelivered end, a reapply) replaces it rather than adding one.
"""

import dataclasses
import json
from datetime import datetime

from sqlalchemy import Connection, delete, func, select

from inspector import errors
from inspector.store import upserts
from inspector.store.models import Introspection

TABLE = Introspection.__table__
#: Where an entry came from: our own introspection, or Ironic's built-in inspection.
INSPECTOR = "inspector"
IRONIC = "ironic"
#: Ids deleted per statement by `prune` (MySQL refuses a subquery on the deleted table).
PRUNE_BATCH = 500

#: The upsert of an entry, per dialect (built once): one per node and start.
UPSERT_STATEMENTS = upserts.statements(
    TABLE,
    ("node_uuid", "started_at"),
    ("source", "state", "finished_at", "error", "raw", "processed"),
)


@dataclasses.dataclass(frozen=True)
class EntryRecord:
    """One introspection of the history, without its data."""

    id: int
    node_uuid: str
    source: str
    state: str
    started_at: datetime
    finished_at: datetime | None
    error: str | None


SUMMARY = tuple(TABLE.c[field.name] for field in dataclasses.fields(EntryRecord))


def page(
    connection: Connection, node_uuid: str, *, limit: int, marker: int | None = None
) -> list[EntryRecord]:
    """Up to `limit` of the node's entries, newest first, after the entry `marker`
    (BadRequest when the node has no such entry)."""
    statement = select(*SUMMARY).where(TABLE.c.node_uuid == node_uuid)
    if marker is not None:
        found = connection.execute(
            select(TABLE.c.id).where(TABLE.c.node_uuid == node_uuid, TABLE.c.id == marker)
        ).first()
        if found is None:
            raise errors.BadRequest(f"Marker not found: {marker}")
        statement = statement.where(TABLE.c.id < marker)
    statement = statement.order_by(TABLE.c.id.desc()).limit(limit)
    return [EntryRecord(*row) for row in connection.execute(statement)]


def entry(connection: Connection, node_uuid: str, started_at: datetime) -> EntryRecord | None:
    """The node's entry of the introspection started at `started_at`, if kept."""
    statement = select(*SUMMARY).where(
        TABLE.c.node_uuid == node_uuid, TABLE.c.started_at == started_at
    )
    row = connection.execute(statement).first()
    return None if row is None else EntryRecord(*row)


def newest_finish(connection: Connection, source: str) -> datetime | None:
    """The latest end of the entries of `source`: where a look for newer ones starts."""
    statement = select(func.max(TABLE.c.finished_at)).where(TABLE.c.source == source)
    return connection.execute(statement).scalar()


def has_any(connection: Connection, node_uuid: str) -> bool:
    statement = select(TABLE.c.id).where(TABLE.c.node_uuid == node_uuid).limit(1)
    return connection.execute(statement).first() is not None


def data(connection: Connection, node_uuid: str, ident: int) -> tuple[EntryRecord, dict] | None:
    """The entry and its data ({"raw": ..., "processed": ...}, each None when not kept)."""
    statement = select(*SUMMARY, TABLE.c.raw, TABLE.c.processed).where(
        TABLE.c.node_uuid == node_uuid, TABLE.c.id == ident
    )
    row = connection.execute(statement).first()
    if row is None:
        return None
    raw, processed = row[-2:]
    return EntryRecord(*row[:-2]), {
        "raw": None if raw is None else json.loads(raw),
        "processed": None if processed is None else json.loads(processed),
    }


def finished(
    connection: Connection, node_uuid: str, *, before: datetime | None = None, limit: int = 1
) -> list[EntryRecord]:
    """The node's newest finished entries (started before `before`, when given): what a
    drift compares with. A failed introspection is never a base."""
    statement = select(*SUMMARY).where(
        TABLE.c.node_uuid == node_uuid, TABLE.c.state == "finished", TABLE.c.raw.is_not(None)
    )
    if before is not None:
        statement = statement.where(TABLE.c.started_at < before)
    statement = statement.order_by(TABLE.c.id.desc()).limit(limit)
    return [EntryRecord(*row) for row in connection.execute(statement)]


def prune(connection: Connection, keep_count: int) -> int:
    """Delete every node's entries beyond its `keep_count` newest (one at least: the
    newest is never deleted); how many went. One batch: the caller repeats."""
    rank = (
        func.row_number()
        .over(partition_by=TABLE.c.node_uuid, order_by=TABLE.c.id.desc())
        .label("rank")
    )
    ranked = select(TABLE.c.id, rank).subquery()
    doomed = [
        row[0]
        for row in connection.execute(
            select(ranked.c.id).where(ranked.c.rank > max(keep_count, 1)).limit(PRUNE_BATCH)
        )
    ]
    if doomed:
        connection.execute(delete(TABLE).where(TABLE.c.id.in_(doomed)))
    return len(doomed)


def forget(connection: Connection, node_uuid: str) -> int:
    """Delete the node's whole history (the node left Ironic)."""
    return connection.execute(delete(TABLE).where(TABLE.c.node_uuid == node_uuid)).rowcount
