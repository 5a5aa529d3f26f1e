"""Seeding the store in tests through the write the service makes: `Store.apply`, a state
change with its request row (recorded under the event SEED, and a request id of its own).
"""

import uuid
from datetime import datetime

from inspector.store import UNSET, Change, NodeRecord, Store

#: The event a seeded change records: the test's own arrangement, no request of the API.
SEED = "seed"


def request_id() -> str:
    return f"seed-{uuid.uuid4().hex[:12]}"


def node(
    store: Store,
    node_uuid: str,
    state: str,
    *,
    started_at: datetime | None = None,
    manage_boot: bool = True,
) -> NodeRecord:
    """Create the node in `state`, at version 1; Conflict when it exists."""
    change = Change(
        node_uuid,
        None,
        request_id(),
        SEED,
        None,
        state,
        started_at=started_at,
        manage_boot=manage_boot,
    )
    return store.apply(change)


def move(store: Store, node_uuid: str, state: str, **fields) -> NodeRecord:
    """Compare-and-swap the node, as read now, into `state` with `fields` (error,
    started_at, finished_at: left as they are when not given)."""
    current = store.get_node(node_uuid)
    change = Change(
        node_uuid,
        current.version,
        request_id(),
        SEED,
        current.state,
        state,
        **{name: fields.get(name, UNSET) for name in ("error", "started_at", "finished_at")},
    )
    assert set(fields) <= {"error", "started_at", "finished_at"}, fields
    return store.apply(change, current)
