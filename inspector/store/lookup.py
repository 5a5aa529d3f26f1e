"""Lookup attributes (MACs, BMC addresses) and stored introspection data, per node.

Queries inside a caller's session; returns plain values. The lookup uses the primary
key's (name, value) index: one query whatever the number of nodes.
"""

import json
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    TextClause,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from inspector.store.models import Attribute, IntrospectionData, Node
from inspector.store.nodes import NodeRecord

ATTRIBUTES = Attribute.__table__
DATA = IntrospectionData.__table__
NODES = Node.__table__


def set_attributes(session: Session, node_uuid: str, attributes: dict[str, list[str]]) -> None:
    """Replace the node's lookup attributes with `attributes` (name -> values)."""
    session.execute(delete(Attribute).where(Attribute.node_uuid == node_uuid))
    rows = {
        (name, value.lower()) for name, values in attributes.items() for value in values if value
    }
    session.add_all(Attribute(name=n, value=v, node_uuid=node_uuid) for n, v in sorted(rows))
    session.flush()


def _counts(attributes: dict[str, list[str]]):
    """node_uuid, how many of `attributes` point at it; None when there is nothing."""
    clauses = [
        and_(ATTRIBUTES.c.name == name, ATTRIBUTES.c.value.in_(sorted({v.lower() for v in values})))
        for name, values in attributes.items()
        if any(values)
    ]
    if not clauses:
        return None
    return (
        select(ATTRIBUTES.c.node_uuid, func.count().label("matches"))
        .where(or_(*clauses))
        .group_by(ATTRIBUTES.c.node_uuid)
    )


def matches(connection: Connection, attributes: dict[str, list[str]]) -> dict[str, int]:
    """node uuid -> how many of `attributes` point at it (one query)."""
    statement = _counts(attributes)
    if statement is None:
        return {}
    return {node_uuid: count for node_uuid, count in connection.execute(statement)}


def candidates(
    connection: Connection, attributes: dict[str, list[str]]
) -> dict[str, tuple[int, NodeRecord]]:
    """node uuid -> (how many of `attributes` point at it, its node row): the lookup
    and the read of the nodes it finds in one round trip."""
    counts = _counts(attributes)
    if counts is None:
        return {}
    counted = counts.subquery()
    # Attributes belong to a node (foreign key, ON DELETE CASCADE): the join loses none.
    statement = select(counted.c.matches, NODES).join(NODES, NODES.c.uuid == counted.c.node_uuid)
    found = {}
    for row in connection.execute(statement):
        fields = row._asdict()
        count = fields.pop("matches")
        found[fields["uuid"]] = (count, NodeRecord(**fields))
    return found


def attributes_of(session: Session, node_uuid: str) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    rows = session.execute(
        select(Attribute.name, Attribute.value)
        .where(Attribute.node_uuid == node_uuid)
        .order_by(Attribute.name, Attribute.value)
    )
    for name, value in rows:
        result.setdefault(name, []).append(value)
    return result


#: The columns an upsert of introspection data writes, as parameters.
_UPSERT_COLUMNS = (
    "(node_uuid, processed, data, stored_at) VALUES (:node_uuid, :processed, :data, :stored_at)"
)
_ON_CONFLICT = (
    " ON CONFLICT (node_uuid, processed) DO UPDATE SET data = excluded.data, "
    "stored_at = excluded.stored_at"
)
#: The dialects whose INSERT can replace the row it collides with, in one statement.
#: Text, not the dialects' insert constructs: SQLAlchemy compiles those again on every
#: execution (they have no cache key), a millisecond of CPU per ramdisk post.
_UPSERTS = {
    "postgresql": _ON_CONFLICT,
    "sqlite": _ON_CONFLICT,
    "mysql": " ON DUPLICATE KEY UPDATE data = VALUES(data), stored_at = VALUES(stored_at)",
    "mariadb": " ON DUPLICATE KEY UPDATE data = VALUES(data), stored_at = VALUES(stored_at)",
}


def _upsert(conflict: str) -> TextClause:
    sql = f"INSERT INTO {DATA.name} {_UPSERT_COLUMNS}{conflict}"
    return text(sql).bindparams(
        bindparam("node_uuid", type_=DATA.c.node_uuid.type),
        bindparam("processed", type_=DATA.c.processed.type),
        bindparam("data", type_=DATA.c.data.type),
        bindparam("stored_at", type_=DATA.c.stored_at.type),
    )


#: The upsert statement of each dialect that has one, built once.
_UPSERT_STATEMENTS = {dialect: _upsert(conflict) for dialect, conflict in _UPSERTS.items()}


def can_upsert(connection_or_engine: Connection | Engine) -> bool:
    """Whether store_data is one statement there, atomic without a transaction."""
    return connection_or_engine.dialect.name in _UPSERTS


def store_data(
    connection: Connection, node_uuid: str, data: dict[str, Any], *, processed: bool, now: datetime
) -> None:
    """Insert or replace the node's raw (processed=False) or processed data: one
    statement where the dialect has an upsert, else an update and maybe an insert (to
    run in a transaction)."""
    encoded = json.dumps(data, sort_keys=True)
    values = {"node_uuid": node_uuid, "processed": processed, "data": encoded, "stored_at": now}
    upsert = _UPSERT_STATEMENTS.get(connection.dialect.name)
    if upsert is not None:
        connection.execute(upsert, values)
        return
    key = (DATA.c.node_uuid == node_uuid) & (DATA.c.processed == processed)
    if connection.execute(update(DATA).where(key).values(data=encoded, stored_at=now)).rowcount:
        return
    connection.execute(insert(DATA).values(**values))


def get_data(session: Session, node_uuid: str, *, processed: bool) -> dict[str, Any] | None:
    row = session.get(IntrospectionData, (node_uuid, processed))
    return None if row is None else json.loads(row.data)
