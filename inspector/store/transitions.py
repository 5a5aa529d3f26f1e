"""The worker's hot path as statements built once: read a node with a request, commit a
state change with its request row, mark a request; few round trips, no ORM objects.

The Store runs them as `prepared.Prepared` statements (the state change in a
transaction where one statement cannot do it, see `apply`)."""

import dataclasses
from datetime import datetime
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnClause,
    ColumnElement,
    Connection,
    Label,
    Table,
    Update,
    any_,
    bindparam,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.dml import ReturningInsert

from inspector import errors
from inspector.machine import UNFINISHED, RequestStatus
from inspector.store.models import Node, Request
from inspector.store.nodes import FIRST_VERSION, UNSET, NodeRecord, Unset
from inspector.store.requests import RequestRecord

NODES = Node.__table__
REQUESTS = Request.__table__

#: A node's row by uuid. Built once: SQLAlchemy then only looks its compiled form up
#: instead of building and hashing a new statement (the Store also prepares it).
READ_NODE = select(NODES).where(NODES.c.uuid == bindparam("uuid"))
#: Several nodes' rows in one statement (PostgreSQL: an array parameter), for reads
#: coalesced by `coalesce.Coalescer`.
READ_NODES = select(NODES).where(
    NODES.c.uuid == any_(bindparam("uuids", type_=ARRAY(NODES.c.uuid.type)))
)


def _prefixed(table: Table, prefix: str) -> list[Label[Any]]:
    return [column.label(prefix + column.name) for column in table.c]


def _constant(value: str) -> ColumnClause[Any]:
    """One of our own status words written into the statement (no bind parameter)."""
    return literal_column(f"'{value}'")


#: The node (by uuid) and the request (by id) in ONE round trip: both outer-joined to a
#: one-row anchor, so either may be missing. Columns are prefixed `node_`/`request_`.
LOAD = select(*_prefixed(NODES, "node_"), *_prefixed(REQUESTS, "request_")).select_from(
    select(literal_column("1").label("one"))
    .subquery("anchor")
    .outerjoin(NODES, NODES.c.uuid == bindparam("uuid"))
    .outerjoin(REQUESTS, REQUESTS.c.request_id == bindparam("request_id"))
)


def _mark(target: str, sources: tuple[str, ...], **values: ColumnElement[Any]) -> Update:
    return (
        update(REQUESTS)
        .where(
            REQUESTS.c.request_id == bindparam("request_id"),
            REQUESTS.c.status.in_([_constant(source) for source in sources]),
        )
        .values(status=_constant(target), **values)
    )


#: Request marks, built once (see `finish`, `interrupt` and `ran`).
FINISH = _mark(RequestStatus.DONE, tuple(UNFINISHED), done_at=bindparam("now"))
INTERRUPT = _mark(RequestStatus.INTERRUPTED, (RequestStatus.APPLIED,))
RAN = _mark(RequestStatus.RAN, (RequestStatus.APPLIED, RequestStatus.INTERRUPTED))


@dataclasses.dataclass(frozen=True)
class Change:
    """A state change to commit with `Store.apply`, with the request that caused it; the
    columns UNSET are kept (`inspector.commit.change_for` sets those the target writes)."""

    node_uuid: str
    expected_version: int | None
    request_id: str
    event: str
    source: str | None
    target: str
    status: str = RequestStatus.APPLIED
    error: str | Unset | None = UNSET
    started_at: datetime | Unset | None = UNSET
    finished_at: datetime | Unset | None = UNSET
    manage_boot: bool | Unset = UNSET


def loaded(row: dict) -> tuple[NodeRecord | None, RequestRecord | None]:
    """The records in a row of LOAD."""
    node = {name[5:]: value for name, value in row.items() if name.startswith("node_")}
    seen = {name[8:]: value for name, value in row.items() if name.startswith("request_")}
    return (
        None if node["uuid"] is None else NodeRecord(**node),
        None if seen["request_id"] is None else RequestRecord(**seen),
    )


def _optional(change: Change) -> dict[str, Any]:
    values: dict[str, Any] = {"error": change.error, "started_at": change.started_at}
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
        record = created(change, now)
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
            raise busy(change)
        record = swapped(change, previous, now)
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
            done_at=None if change.status == RequestStatus.APPLIED else now,
        )
    )
    return record


def _recorded(written: CTE) -> ReturningInsert[tuple[str]]:
    """The request row, inserted from the node row `written` (a CTE returning the
    node's uuid and new version): no row, no request."""
    column = REQUESTS.c
    row = {
        "request_id": bindparam("request_id", type_=column.request_id.type),
        "node_uuid": written.c.uuid,
        "event": bindparam("event", type_=column.event.type),
        "source_state": bindparam("source", type_=column.source_state.type),
        "target_state": bindparam("new_state", type_=column.target_state.type),
        "status": bindparam("status", type_=column.status.type),
        "version": written.c.version,
        "reason": bindparam("reason", type_=column.reason.type),
        "applied_at": bindparam("now", type_=column.applied_at.type),
        "done_at": bindparam("done_at", type_=column.done_at.type),
    }
    return (
        insert(REQUESTS)
        .from_select(list(row), select(*row.values()))
        .returning(REQUESTS.c.request_id)
    )


def swap_statement(fields: tuple[str, ...]) -> ReturningInsert[tuple[str]]:
    """PostgreSQL: the compare-and-swap and the request row as ONE statement
    (`WITH changed AS (UPDATE ... RETURNING) INSERT ... SELECT FROM changed`), atomic
    without a transaction around it: one round trip instead of four. `fields` are the
    optional node columns it sets (see `_optional`); the parameters are `swap_params`'.
    Nothing is written when the version moved (no row comes back)."""
    changed = (
        update(NODES)
        .where(NODES.c.uuid == bindparam("node_uuid"), NODES.c.version == bindparam("expected"))
        .values(
            state=bindparam("new_state"),
            version=NODES.c.version + literal_column("1"),
            updated_at=bindparam("now"),
            **{field: bindparam(f"new_{field}") for field in fields},
        )
        .returning(NODES.c.uuid, NODES.c.version)
        .cte("changed")
    )
    return _recorded(changed)


#: PostgreSQL: a new node and its first request row as ONE statement, like the swap;
#: Conflict (the database refuses it) when the node or the request already exists. The
#: parameters are `create_params`'.
CREATE = _recorded(
    insert(NODES)
    .values(
        uuid=bindparam("node_uuid"),
        state=bindparam("new_state"),
        version=literal_column(str(FIRST_VERSION)),
        started_at=bindparam("new_started_at"),
        finished_at=bindparam("new_finished_at"),
        error=bindparam("new_error"),
        manage_boot=bindparam("new_manage_boot"),
        updated_at=bindparam("now"),
    )
    .returning(NODES.c.uuid, NODES.c.version)
    .cte("created")
)


def _request_params(change: Change, now: datetime) -> dict:
    """The parameters `_recorded` takes (the request row), with the node's uuid."""
    return {
        "node_uuid": change.node_uuid,
        "new_state": str(change.target),
        "now": now,
        "request_id": change.request_id,
        "event": str(change.event),
        "source": None if change.source is None else str(change.source),
        "status": change.status,
        "reason": change.error if isinstance(change.error, str) else None,
        "done_at": None if change.status == RequestStatus.APPLIED else now,
    }


def swap_params(change: Change, now: datetime) -> tuple[tuple[str, ...], dict]:
    """The fields of `swap_statement` for `change`, and its parameters."""
    fields = _optional(change)
    params = _request_params(change, now)
    params["expected"] = change.expected_version
    params.update({f"new_{field}": value for field, value in fields.items()})
    return tuple(fields), params


def create_params(change: Change, now: datetime) -> tuple[NodeRecord, dict]:
    """The node CREATE writes for `change`, and its parameters."""
    node = created(change, now)
    params = _request_params(change, now)
    params.update(
        new_started_at=node.started_at,
        new_finished_at=node.finished_at,
        new_error=node.error,
        new_manage_boot=node.manage_boot,
    )
    return node, params


def created(change: Change, now: datetime) -> NodeRecord:
    """The node a change without an expected version creates."""
    fields = _optional(change)
    return NodeRecord(
        uuid=change.node_uuid,
        state=change.target,
        version=FIRST_VERSION,
        started_at=fields.get("started_at"),
        finished_at=fields.get("finished_at"),
        error=fields.get("error"),
        manage_boot=fields.get("manage_boot", True),
        updated_at=now,
    )


def swapped(change: Change, previous: NodeRecord, now: datetime) -> NodeRecord:
    """The node as `swap_statement` committed it (built from what was written)."""
    return dataclasses.replace(
        previous,
        state=change.target,
        version=previous.version + 1,
        updated_at=now,
        **_optional(change),
    )


def busy(change: Change) -> errors.NodeBusy:
    return errors.NodeBusy(
        f"node {change.node_uuid} changed under us (expected version {change.expected_version})"
    )
