"""Transition request queries inside a caller's session: record, find, finish, history.

A request row is written in the same transaction as the state change it caused, so a
redelivered request is always recognised. Returns frozen records; never commits.
"""

import dataclasses
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from inspector.machine import RequestStatus
from inspector.store.models import Request


@dataclasses.dataclass(frozen=True)
class RequestRecord:
    request_id: str
    node_uuid: str
    event: str
    source_state: str | None
    target_state: str
    status: str
    version: int | None
    reason: str | None
    applied_at: datetime
    done_at: datetime | None

    @classmethod
    def from_model(cls, row: Request) -> "RequestRecord":
        return cls(**{f.name: getattr(row, f.name) for f in dataclasses.fields(cls)})


def record(
    session: Session,
    *,
    request_id: str,
    node_uuid: str,
    event: str,
    source_state: str | None,
    target_state: str,
    status: str,
    version: int | None,
    now: datetime,
    reason: str | None = None,
) -> None:
    """Insert the request's row; a second row for one id fails at flush (Conflict)."""
    session.add(
        Request(
            request_id=request_id,
            node_uuid=node_uuid,
            event=event,
            source_state=source_state,
            target_state=target_state,
            status=status,
            version=version,
            reason=reason,
            applied_at=now,
            done_at=now if status != RequestStatus.APPLIED else None,
        )
    )
    session.flush()


def find(session: Session, request_id: str) -> RequestRecord | None:
    row = session.get(Request, request_id, populate_existing=True)
    return None if row is None else RequestRecord.from_model(row)


def history(session: Session, node_uuid: str) -> list[RequestRecord]:
    """The node's requests in the order they were applied (ties: by version)."""
    rows = session.scalars(
        select(Request)
        .where(Request.node_uuid == node_uuid)
        .order_by(Request.applied_at, Request.version)
    )
    return [RequestRecord.from_model(row) for row in rows]
