"""Listing introspections: newest first, paginated by marker, filtered by state."""

import dataclasses

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from inspector import errors
from inspector.store.models import Node
from inspector.store.nodes import NodeRecord

#: A node's record, column by column: rows, not ORM objects (a page is up to
#: api_max_limit of them, and the benchmark's sweeps read every node every 20 s).
COLUMNS = tuple(getattr(Node, field.name) for field in dataclasses.fields(NodeRecord))


def page(
    session: Session, *, limit: int, marker: str | None = None, states: list[str] | None = None
) -> list[NodeRecord]:
    """Up to `limit` nodes ordered by (started_at, uuid) descending, after `marker`."""
    statement = select(*COLUMNS)
    if states:
        statement = statement.where(Node.state.in_(states))
    if marker is not None:
        anchor = session.get(Node, marker)
        if anchor is None:
            raise errors.BadRequest(f"Marker not found: {marker}")
        # Every node gets started_at when its introspection starts or it is enrolled.
        statement = statement.where(
            or_(
                Node.started_at < anchor.started_at,
                (Node.started_at == anchor.started_at) & (Node.uuid < anchor.uuid),
            )
        )
    statement = statement.order_by(Node.started_at.desc(), Node.uuid.desc())
    return [NodeRecord(*row) for row in session.execute(statement.limit(limit))]
