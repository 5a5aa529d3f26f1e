"""The worker's hot path in Core statements: read a node with a request, commit a state
change with its request row, mark a request done. Few round trips, no ORM objects.

Functions take a Connection; the Store decides the transaction around them.
"""

import dataclasses
from datetime import datetime

from sqlalchemy import Connection, bindparam, insert, literal, select, update

from inspector import errors
from inspector.machine import FINAL_STATES, State, Transition
from inspector.store import requests
from inspector.store.models import Node, Request
from inspector.store.nodes import FIRST_VERSION, UNSET, NodeRecord, Unset
from inspector.store.requests import RequestRecord

NODES = Node.__table__
REQUESTS = Request.__table__

#: A node's row by uuid. Built once: SQLAlchemy then only looks its compiled form up
#: instead of building and hashing a new statement (the Store also prepares it).
READ_NODE = select(NODES).where(NODES.c.uuid == bindparam("uuid"))


@dataclasses.dataclass(frozen=True)
class Change:
    """A state change to commit with `Store.apply`, with the request that caused it."""

    node_uuid: str
    expected_version: int | None
    request_id: str
    event: str
    source: str | None
    target: str
    status: str = requests.APPLIED
    error: str | Unset | None = UNSET
    started_at: datetime | Unset | None = UNSET
    finished_at: datetime | Unset | None = UNSET
    manage_boot: bool | Unset = UNSET


def change_for(
    transition: Transition,
    node_uuid: str,
    node: NodeRecord | None,
    request_id: str,
    now: datetime,
    *,
    status: str,
    reason: str | None = None,
    manage_boot: bool | Unset = UNSET,
) -> Change:
    """The Change that moves `node` along `transition`, with the columns each target
    implies: a new run clears the last one's times and error; a final state stamps
    finished_at; error keeps the reason."""
    change = Change(
        node_uuid=node_uuid,
        expected_version=None if node is None else node.version,
        request_id=request_id,
        event=transition.event,
        source=transition.source,
        target=transition.target,
        status=status,
        manage_boot=manage_boot,
    )
    target = transition.target
    if target in (State.STARTING, State.ENROLLING) and transition.source != target:
        return dataclasses.replace(change, started_at=now, finished_at=None, error=None)
    if target is State.REAPPLYING:
        return dataclasses.replace(change, finished_at=None, error=None)
    if target in FINAL_STATES:
        error = (reason or transition.reason) if target is State.ERROR else None
        return dataclasses.replace(change, finished_at=now, error=error)
    return change


def read_node(connection: Connection, node_uuid: str) -> NodeRecord | None:
    row = connection.execute(READ_NODE, {"uuid": node_uuid}).first()
    return None if row is None else NodeRecord(**row._asdict())


def load(
    connection: Connection, node_uuid: str, request_id: str
) -> tuple[NodeRecord | None, RequestRecord | None]:
    node = read_node(connection, node_uuid)
    seen = connection.execute(select(REQUESTS).where(REQUESTS.c.request_id == request_id)).first()
    return node, None if seen is None else RequestRecord(**seen._asdict())


def _optional(change: Change) -> dict:
    values = {"error": change.error, "started_at": change.started_at}
    values["finished_at"] = change.finished_at
    values["manage_boot"] = change.manage_boot
    return {k: v for k, v in values.items() if v is not UNSET}


def apply(
    connection: Connection, change: Change, previous: NodeRecord | None, now: datetime
) -> NodeRecord:
    """Create the node or compare-and-swap it, then record the request; returns the
    node as committed (built from what was written, not read back)."""
    fields = _optional(change)
    if change.expected_version is None:
        record = NodeRecord(
            uuid=change.node_uuid,
            state=change.target,
            version=FIRST_VERSION,
            started_at=fields.get("started_at"),
            finished_at=fields.get("finished_at"),
            error=fields.get("error"),
            manage_boot=fields.get("manage_boot", True),
            updated_at=now,
        )
        connection.execute(insert(NODES).values(**dataclasses.asdict(record)))
    else:
        if previous is None or previous.version != change.expected_version:
            raise ValueError("apply needs the node as read at expected_version")
        result = connection.execute(
            update(NODES)
            .where(NODES.c.uuid == change.node_uuid, NODES.c.version == change.expected_version)
            .values(state=change.target, version=NODES.c.version + 1, updated_at=now, **fields)
        )
        if result.rowcount != 1:
            raise errors.NodeBusy(
                f"node {change.node_uuid} changed under us (expected version "
                f"{change.expected_version})"
            )
        record = dataclasses.replace(
            previous, state=change.target, version=previous.version + 1, updated_at=now, **fields
        )
    connection.execute(
        insert(REQUESTS).values(
            request_id=change.request_id,
            node_uuid=change.node_uuid,
            event=change.event,
            source_state=change.source,
            target_state=change.target,
            status=change.status,
            version=record.version,
            reason=change.error if isinstance(change.error, str) else None,
            applied_at=now,
            done_at=None if change.status == requests.APPLIED else now,
        )
    )
    return record


def swap_in_one_statement(
    connection: Connection, change: Change, previous: NodeRecord, now: datetime
) -> NodeRecord:
    """PostgreSQL: the compare-and-swap and the request row as ONE statement
    (`WITH changed AS (UPDATE ... RETURNING) INSERT ... SELECT FROM changed`), atomic
    without a transaction around it: one round trip instead of four. NodeBusy when the
    version moved (nothing is then written)."""
    fields = _optional(change)
    changed = (
        update(NODES)
        .where(NODES.c.uuid == change.node_uuid, NODES.c.version == change.expected_version)
        .values(state=change.target, version=NODES.c.version + 1, updated_at=now, **fields)
        .returning(NODES.c.uuid, NODES.c.version)
        .cte("changed")
    )
    row = {
        "request_id": literal(change.request_id, REQUESTS.c.request_id.type),
        "node_uuid": changed.c.uuid,
        "event": literal(str(change.event), REQUESTS.c.event.type),
        "source_state": literal(change.source, REQUESTS.c.source_state.type),
        "target_state": literal(str(change.target), REQUESTS.c.target_state.type),
        "status": literal(change.status, REQUESTS.c.status.type),
        "version": changed.c.version,
        "reason": literal(
            change.error if isinstance(change.error, str) else None, REQUESTS.c.reason.type
        ),
        "applied_at": literal(now, REQUESTS.c.applied_at.type),
        "done_at": literal(
            None if change.status == requests.APPLIED else now, REQUESTS.c.done_at.type
        ),
    }
    statement = (
        insert(REQUESTS)
        .from_select(list(row), select(*row.values()))
        .returning(REQUESTS.c.request_id)
    )
    # rowcount is not reliable for INSERT ... SELECT with a data-modifying CTE.
    if connection.execute(statement).first() is None:
        raise errors.NodeBusy(
            f"node {change.node_uuid} changed under us (expected version {change.expected_version})"
        )
    return dataclasses.replace(
        previous, state=change.target, version=previous.version + 1, updated_at=now, **fields
    )


def finish(connection: Connection, request_id: str, now: datetime) -> None:
    connection.execute(
        update(REQUESTS)
        .where(REQUESTS.c.request_id == request_id, REQUESTS.c.status.in_(requests.UNFINISHED))
        .values(status=requests.DONE, done_at=now)
    )


def interrupt(connection: Connection, request_id: str) -> None:
    connection.execute(
        update(REQUESTS)
        .where(REQUESTS.c.request_id == request_id, REQUESTS.c.status == requests.APPLIED)
        .values(status=requests.INTERRUPTED)
    )


def ran(connection: Connection, request_id: str) -> None:
    connection.execute(
        update(REQUESTS)
        .where(
            REQUESTS.c.request_id == request_id,
            REQUESTS.c.status.in_((requests.APPLIED, requests.INTERRUPTED)),
        )
        .values(status=requests.RAN)
    )
