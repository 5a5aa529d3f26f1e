"""Queries of the Ironic snapshots: the node and its ports as Ironic described them when
the node's introspection started, so that processing needs no second read of either.

A snapshot is a JSON document (what inspector.ironic's models hold); the store does not
interpret it. Taken again at every start; removed with the node (ON DELETE CASCADE).
"""

import dataclasses
import json
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select

from inspector.store import upserts
from inspector.store.models import IronicSnapshot

SNAPSHOTS = IronicSnapshot.__table__


@dataclasses.dataclass(frozen=True)
class SnapshotRecord:
    node_uuid: str
    node: dict[str, Any]
    ports: list[dict[str, Any]] | None
    taken_at: datetime


#: The upsert of a node's snapshot, per dialect (built once); parameters from `encode`.
UPSERT_STATEMENTS = upserts.statements(SNAPSHOTS, ("node_uuid",), ("node", "ports", "taken_at"))


def encode(
    node_uuid: str, node: dict[str, Any], ports: list[dict[str, Any]] | None, now: datetime
) -> dict[str, Any]:
    """The snapshot's row."""
    return {
        "node_uuid": node_uuid,
        "node": json.dumps(node, sort_keys=True),
        "ports": None if ports is None else json.dumps(ports, sort_keys=True),
        "taken_at": now,
    }


#: A node's snapshot row by node_uuid (the Store prepares it: read twice per introspection).
READ = select(SNAPSHOTS).where(SNAPSHOTS.c.node_uuid == bindparam("node_uuid"))


def record(row: dict[str, Any] | None) -> SnapshotRecord | None:
    """The snapshot of a `READ` row (a mapping); None for no row."""
    if row is None:
        return None
    ports = None if row["ports"] is None else json.loads(row["ports"])
    return SnapshotRecord(row["node_uuid"], json.loads(row["node"]), ports, row["taken_at"])
