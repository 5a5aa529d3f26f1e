"""The introspection status document, as ironic-inspector returns it."""

from datetime import datetime
from typing import Any

from inspector.api.links import link
from inspector.machine import FINAL_STATES
from inspector.store import NodeRecord


def timestamp(value: datetime | None) -> str | None:
    """ISO 8601, UTC, without a zone suffix (ironic-inspector's format)."""
    return None if value is None else value.isoformat()


def status(node: NodeRecord, *, under: str | None = None) -> dict[str, Any]:
    """`under`: the API root, when the caller builds many (links.root())."""
    return {
        "uuid": node.uuid,
        "state": node.state,
        "finished": node.state in FINAL_STATES,
        "started_at": timestamp(node.started_at),
        "finished_at": timestamp(node.finished_at),
        "error": node.error,
        "links": [link(f"v1/introspection/{node.uuid}", under=under)],
    }
