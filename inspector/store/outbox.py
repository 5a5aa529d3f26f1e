"""The notification outbox: rows written in the transaction of the state change they
tell of (so none is lost and none is invented), read back by the sender until every
driver accepted them. Payloads are versioned JSON documents with a stable id.
"""

import dataclasses
import json
import uuid
from datetime import datetime, timedelta

from sqlalchemy import Connection, func, insert, select, update

from inspector.machine import effects_of
from inspector.store.models import Notification
from inspector.store.nodes import NodeRecord

OUTBOX = Notification.__table__

#: Version of the payload layout below; bump the minor for additions, the major for changes.
PAYLOAD_VERSION = "1.0"
#: The event type of a hardware drift an introspection found (see inspector.processing.drift).
DRIFT = "baremetal_introspection.drift"


@dataclasses.dataclass(frozen=True)
class NotificationRecord:
    id: str
    event_type: str
    node_uuid: str
    payload: dict
    attempts: int
    created_at: datetime


def event_type(source: str | None, target: str) -> str | None:
    """The notification a transition from source to target sends, if any: its target's
    entry in the machine's table says (`machine.ENTRIES`)."""
    return effects_of(source, target).notifies


def _stamp(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat() + "Z"


def record(
    connection: Connection,
    kind: str,
    node: NodeRecord,
    *,
    request_id: str,
    event: str,
    now: datetime,
) -> str:
    """Write the notification of `node` (as committed) entering its state; its id."""
    ident = str(uuid.uuid4())
    duration = None
    if node.started_at and node.finished_at:
        duration = (node.finished_at - node.started_at).total_seconds()
    payload = {
        "id": ident,
        "version": PAYLOAD_VERSION,
        "event_type": kind,
        "timestamp": _stamp(now),
        "node_uuid": node.uuid,
        "state": str(node.state),
        "error": node.error,
        "started_at": _stamp(node.started_at),
        "finished_at": _stamp(node.finished_at),
        "duration_seconds": duration,
        "request_id": request_id,
        "event": str(event),
    }
    _insert(connection, payload, now)
    return ident


def _insert(connection: Connection, payload: dict, now: datetime) -> None:
    """The outbox row of `payload` (which names its id, event type and node)."""
    connection.execute(
        insert(OUTBOX).values(
            id=payload["id"],
            event_type=payload["event_type"],
            node_uuid=payload["node_uuid"],
            payload=json.dumps(payload, sort_keys=True),
            created_at=now,
            due_at=now,
            attempts=0,
        )
    )


def record_drift(
    connection: Connection,
    node_uuid: str,
    started_at: datetime | None,
    drift: dict,
    now: datetime,
) -> str:
    """Write the notification of the hardware drift the node's introspection started at
    `started_at` found."""
    ident = str(uuid.uuid4())
    payload = {
        "id": ident,
        "version": PAYLOAD_VERSION,
        "event_type": DRIFT,
        "timestamp": _stamp(now),
        "node_uuid": node_uuid,
        "started_at": _stamp(started_at),
        "base": drift.get("base"),
        "summary": drift.get("summary"),
        "changes": drift.get("changes"),
    }
    _insert(connection, payload, now)
    return ident


def due(connection: Connection, now: datetime, limit: int) -> list[NotificationRecord]:
    """Undelivered notifications whose next attempt is due, oldest first."""
    rows = connection.execute(
        select(OUTBOX)
        .where(OUTBOX.c.delivered_at.is_(None), OUTBOX.c.due_at <= now)
        .order_by(OUTBOX.c.created_at, OUTBOX.c.id)
        .limit(limit)
    )
    return [
        NotificationRecord(
            row.id,
            row.event_type,
            row.node_uuid,
            json.loads(row.payload),
            row.attempts,
            row.created_at,
        )
        for row in rows
    ]


def delivered(connection: Connection, ident: str, now: datetime) -> None:
    connection.execute(
        update(OUTBOX)
        .where(OUTBOX.c.id == ident)
        .values(delivered_at=now, attempts=OUTBOX.c.attempts + 1, last_error=None)
    )


def postpone(connection: Connection, ident: str, now: datetime, delay: float, error: str) -> None:
    connection.execute(
        update(OUTBOX)
        .where(OUTBOX.c.id == ident)
        .values(
            due_at=now + timedelta(seconds=delay),
            attempts=OUTBOX.c.attempts + 1,
            last_error=error[:2000],
        )
    )


def pending(connection: Connection) -> int:
    return connection.execute(
        select(func.count()).select_from(OUTBOX).where(OUTBOX.c.delivered_at.is_(None))
    ).scalar_one()


def forget_delivered(connection: Connection, before: datetime) -> int:
    return connection.execute(OUTBOX.delete().where(OUTBOX.c.delivered_at < before)).rowcount
