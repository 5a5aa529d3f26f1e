"""Lookup attributes (MACs, BMC addresses) and stored introspection data, per node.

Queries inside a caller's session; returns plain values. The lookup uses the primary
key's (name, value) index: one query whatever the number of nodes.
"""

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from inspector.store.models import Attribute, IntrospectionData

ATTRIBUTES = Attribute.__table__
DATA = IntrospectionData.__table__


def set_attributes(session: Session, node_uuid: str, attributes: dict[str, list[str]]) -> None:
    """Replace the node's lookup attributes with `attributes` (name -> values)."""
    session.execute(delete(Attribute).where(Attribute.node_uuid == node_uuid))
    rows = {
        (name, value.lower()) for name, values in attributes.items() for value in values if value
    }
    session.add_all(Attribute(name=n, value=v, node_uuid=node_uuid) for n, v in sorted(rows))
    session.flush()


def matches(connection: Connection, attributes: dict[str, list[str]]) -> dict[str, int]:
    """node uuid -> how many of `attributes` point at it (one query)."""
    clauses = [
        and_(ATTRIBUTES.c.name == name, ATTRIBUTES.c.value.in_(sorted({v.lower() for v in values})))
        for name, values in attributes.items()
        if any(values)
    ]
    if not clauses:
        return {}
    statement = (
        select(ATTRIBUTES.c.node_uuid, func.count())
        .where(or_(*clauses))
        .group_by(ATTRIBUTES.c.node_uuid)
    )
    return {node_uuid: count for node_uuid, count in connection.execute(statement)}


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


def store_data(
    connection: Connection, node_uuid: str, data: dict[str, Any], *, processed: bool, now: datetime
) -> None:
    """Insert or replace the node's raw (processed=False) or processed data."""
    text = json.dumps(data, sort_keys=True)
    key = (DATA.c.node_uuid == node_uuid) & (DATA.c.processed == processed)
    if connection.execute(update(DATA).where(key).values(data=text, stored_at=now)).rowcount:
        return
    connection.execute(
        insert(DATA).values(node_uuid=node_uuid, processed=processed, data=text, stored_at=now)
    )


def get_data(session: Session, node_uuid: str, *, processed: bool) -> dict[str, Any] | None:
    row = session.get(IntrospectionData, (node_uuid, processed))
    return None if row is None else json.loads(row.data)
