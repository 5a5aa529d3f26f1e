"""Lookup attributes (MACs, BMC addresses) and stored introspection data, per node.

Queries inside a caller's session; returns plain values. The lookup uses the primary
key's (name, value) index: one query whatever the number of nodes.
"""

import json
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from inspector.store.models import Attribute, IntrospectionData


def set_attributes(session: Session, node_uuid: str, attributes: dict[str, list[str]]) -> None:
    """Replace the node's lookup attributes with `attributes` (name -> values)."""
    session.execute(delete(Attribute).where(Attribute.node_uuid == node_uuid))
    rows = {
        (name, value.lower()) for name, values in attributes.items() for value in values if value
    }
    session.add_all(Attribute(name=n, value=v, node_uuid=node_uuid) for n, v in sorted(rows))
    session.flush()


def matches(session: Session, attributes: dict[str, list[str]]) -> dict[str, int]:
    """node uuid -> how many of `attributes` point at it."""
    counts: dict[str, int] = {}
    for name, values in attributes.items():
        wanted = sorted({v.lower() for v in values if v})
        if not wanted:
            continue
        statement = (
            select(Attribute.node_uuid, func.count())
            .where(Attribute.name == name, Attribute.value.in_(wanted))
            .group_by(Attribute.node_uuid)
        )
        for node_uuid, count in session.execute(statement):
            counts[node_uuid] = counts.get(node_uuid, 0) + count
    return counts


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
    session: Session, node_uuid: str, data: dict[str, Any], *, processed: bool, now: datetime
) -> None:
    row = session.get(IntrospectionData, (node_uuid, processed))
    text = json.dumps(data, sort_keys=True)
    if row is None:
        session.add(
            IntrospectionData(node_uuid=node_uuid, processed=processed, data=text, stored_at=now)
        )
    else:
        row.data, row.stored_at = text, now
    session.flush()


def get_data(session: Session, node_uuid: str, *, processed: bool) -> dict[str, Any] | None:
    row = session.get(IntrospectionData, (node_uuid, processed))
    return None if row is None else json.loads(row.data)
