"""Lookup attributes (MACs, BMC addresses) and stored introspection data, per node.

Queries inside a caller's session; returns plain values. The lookup uses the primary
key's (name, value) index: one query whatever the number of nodes.
"""

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    Select,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from inspector.store import upserts
from inspector.store.models import Attribute, IntrospectionData, Node
from inspector.store.nodes import NodeRecord

ATTRIBUTES = Attribute.__table__
DATA = IntrospectionData.__table__
NODES = Node.__table__


def pairs(attributes: dict[str, list[str]]) -> tuple[list[str], list[str]]:
    """The distinct (name, lower-cased value) pairs of `attributes`, as a list of names
    and a list of values (the array parameters of the PostgreSQL statements)."""
    rows = sorted(
        {(name, value.lower()) for name, values in attributes.items() for value in values if value}
    )
    return [name for name, _ in rows], [value for _, value in rows]


def set_attributes(
    connection: Connection | Session, node_uuid: str, attributes: dict[str, list[str]]
) -> None:
    """Replace the node's lookup attributes with `attributes` (name -> values): Core
    statements (one DELETE, one multi-row INSERT), inside the caller's transaction."""
    connection.execute(delete(ATTRIBUTES).where(ATTRIBUTES.c.node_uuid == node_uuid))
    names, values = pairs(attributes)
    if names:
        connection.execute(
            insert(ATTRIBUTES),
            [
                {"name": n, "value": v, "node_uuid": node_uuid}
                for n, v in zip(names, values, strict=True)
            ],
        )


#: PostgreSQL: `set_attributes` as one statement of fixed shape, committed on its own
#: (the Store prepares it): the pairs no longer wanted are deleted, the new ones
#: inserted, the ones kept left alone. Parameters: node_uuid, and `pairs`' two lists.
REPLACE_ATTRIBUTES = text(
    "WITH wanted AS (SELECT name, value FROM unnest(CAST(:names AS VARCHAR[]), "
    "CAST(:values AS VARCHAR[])) AS k(name, value)), "
    "gone AS (DELETE FROM attributes WHERE node_uuid = :node_uuid "
    "AND (name, value) NOT IN (SELECT name, value FROM wanted)) "
    "INSERT INTO attributes (name, value, node_uuid) "
    "SELECT name, value, :node_uuid FROM wanted ON CONFLICT DO NOTHING"
)


def _counts(attributes: dict[str, list[str]]) -> Select[tuple[str, int]] | None:
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
    return found(row._mapping for row in connection.execute(statement))


#: PostgreSQL: `candidates` as one statement of fixed shape (the wanted pairs as two
#: array parameters, from `pairs`), prepared once by the Store: building and caching
#: the IN clauses of each lookup cost more CPU than the query.
_WANTED = (
    func.unnest(bindparam("names", type_=ARRAY(String)), bindparam("values", type_=ARRAY(String)))
    .table_valued("name", "value")
    .render_derived(name="wanted")
)
_COUNTED = (
    select(ATTRIBUTES.c.node_uuid, func.count().label("matches"))
    .join_from(
        ATTRIBUTES,
        _WANTED,
        and_(ATTRIBUTES.c.name == _WANTED.c.name, ATTRIBUTES.c.value == _WANTED.c.value),
    )
    .group_by(ATTRIBUTES.c.node_uuid)
    .subquery()
)
CANDIDATES = select(_COUNTED.c.matches, NODES).join(NODES, NODES.c.uuid == _COUNTED.c.node_uuid)


def found(rows: Iterable[Mapping[Any, Any]]) -> dict[str, tuple[int, NodeRecord]]:
    """`candidates`' answer from rows of `CANDIDATES` (mappings: matches and the node)."""
    result: dict[str, tuple[int, NodeRecord]] = {}
    for row in rows:
        fields = dict(row)
        count = fields.pop("matches")
        result[fields["uuid"]] = (count, NodeRecord(**fields))
    return result


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


#: The upsert of a node's data, per dialect (built once); parameters from `encode_data`.
UPSERT_STATEMENTS = upserts.statements(DATA, ("node_uuid", "processed"), ("data", "stored_at"))


def encode_data(
    node_uuid: str, data: dict[str, Any], *, processed: bool, now: datetime
) -> dict[str, Any]:
    """The data's row."""
    encoded = json.dumps(data, sort_keys=True)
    return {"node_uuid": node_uuid, "processed": processed, "data": encoded, "stored_at": now}


def store_data(
    connection: Connection, node_uuid: str, data: dict[str, Any], *, processed: bool, now: datetime
) -> None:
    """Insert or replace the node's raw (processed=False) or processed data: one upsert,
    inside the caller's transaction."""
    values = encode_data(node_uuid, data, processed=processed, now=now)
    connection.execute(UPSERT_STATEMENTS[connection.dialect.name], values)


#: A node's raw or processed data, as JSON text (the Store prepares it).
READ_DATA = select(DATA.c.data).where(
    DATA.c.node_uuid == bindparam("node_uuid"), DATA.c.processed == bindparam("processed")
)


def get_data(session: Session, node_uuid: str, *, processed: bool) -> dict[str, Any] | None:
    row = session.get(IntrospectionData, (node_uuid, processed))
    return None if row is None else json.loads(row.data)
