"""Streamed reads for the fleet report: every node's processed data in one query, fetched in
batches through a server-side cursor (PostgreSQL, MySQL/MariaDB) so that a 10,000-node site
is never held in memory at once. Reads only."""

import json
from collections.abc import Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from inspector.store.lookup import DATA
from inspector.store.snapshots import SNAPSHOTS

#: Rows fetched per round trip.
BATCH = 200


def _name(snapshot: str | None) -> str | None:
    if not snapshot:
        return None
    try:
        node = json.loads(snapshot)
    except ValueError:
        return None
    return node.get("name") if isinstance(node, dict) else None


def processed(
    connection: Connection, *, names: bool, batch: int = BATCH
) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
    """(node uuid, its Ironic name or None, its processed data) of every node that has
    processed data; the name (from the Ironic snapshot of its last introspection) only
    when `names`, as it costs the snapshot's read."""
    columns = [DATA.c.node_uuid, DATA.c.data]
    query = select(*columns).where(DATA.c.processed.is_(True))
    if names:
        query = (
            select(*columns, SNAPSHOTS.c.node)
            .select_from(DATA.outerjoin(SNAPSHOTS, SNAPSHOTS.c.node_uuid == DATA.c.node_uuid))
            .where(DATA.c.processed.is_(True))
        )
    result = connection.execution_options(stream_results=True, yield_per=batch).execute(query)
    for row in result:
        try:
            data = json.loads(row.data)
        except ValueError:
            continue
        if isinstance(data, dict):
            yield row.node_uuid, _name(row.node) if names else None, data
