"""Node queries inside a caller's session: create, read, compare-and-swap the state.

Functions take an open Session so that a caller can combine them in one transaction;
they return frozen records, never ORM objects, and do not commit.
"""

import dataclasses
import enum
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy import delete as sql_delete
from sqlalchemy.orm import Session

from inspector import errors
from inspector.store.models import Node


class _Unset(enum.Enum):
    UNSET = "unset"


#: "Leave this column as it is" (None would mean "set it to NULL").
UNSET: Final = _Unset.UNSET
#: The type of UNSET, for signatures.
Unset: TypeAlias = Literal[_Unset.UNSET]

#: The version of a newly created node.
FIRST_VERSION = 1


@dataclasses.dataclass(frozen=True)
class NodeRecord:
    """A node's row as read at one moment; `version` is what set_state swaps on."""

    uuid: str
    state: str
    version: int
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    manage_boot: bool
    updated_at: datetime

    @classmethod
    def from_model(cls, node: Node) -> "NodeRecord":
        return cls(
            uuid=node.uuid,
            state=node.state,
            version=node.version,
            started_at=node.started_at,
            finished_at=node.finished_at,
            error=node.error,
            manage_boot=node.manage_boot,
            updated_at=node.updated_at,
        )


def create(
    session: Session,
    uuid: str,
    state: str,
    *,
    now: datetime,
    started_at: datetime | None = None,
    manage_boot: bool = True,
) -> NodeRecord:
    """Insert a node at FIRST_VERSION; a duplicate uuid fails at flush (Conflict)."""
    node = Node(
        uuid=uuid,
        state=state,
        version=FIRST_VERSION,
        started_at=started_at,
        finished_at=None,
        error=None,
        manage_boot=manage_boot,
        updated_at=now,
    )
    session.add(node)
    session.flush()
    return NodeRecord.from_model(node)


def get(session: Session, uuid: str) -> NodeRecord:
    # populate_existing: an update earlier in this session bypassed the identity map.
    node = session.get(Node, uuid, populate_existing=True)
    if node is None:
        raise errors.NotFound(f"node {uuid} not found")
    return NodeRecord.from_model(node)


def set_state(
    session: Session,
    uuid: str,
    expected_version: int,
    new_state: str,
    *,
    now: datetime,
    error: str | Unset | None = UNSET,
    started_at: datetime | Unset | None = UNSET,
    finished_at: datetime | Unset | None = UNSET,
) -> int:
    """Move the node to new_state if its version is still expected_version.

    Returns the new version. Raises NodeBusy when another writer moved the version
    (a stalled worker whose lock expired loses here), NotFound without the node.
    """
    values: dict[str, Any] = {
        "state": new_state,
        "version": Node.version + 1,
        "updated_at": now,
    }
    optional = {"error": error, "started_at": started_at, "finished_at": finished_at}
    values.update({k: v for k, v in optional.items() if v is not UNSET})
    statement = (
        update(Node)
        .where(Node.uuid == uuid, Node.version == expected_version)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    result = cast(CursorResult[Any], session.execute(statement))
    if result.rowcount == 1:
        return expected_version + 1
    current = session.scalar(select(Node.version).where(Node.uuid == uuid))
    if current is None:
        raise errors.NotFound(f"node {uuid} not found")
    raise errors.NodeBusy(
        f"node {uuid} changed under us: version {current}, expected {expected_version}"
    )


def delete(session: Session, uuid: str) -> bool:
    """Delete the node; its attributes, data and requests go with it (ON DELETE CASCADE)."""
    result = cast(CursorResult[Any], session.execute(sql_delete(Node).where(Node.uuid == uuid)))
    return result.rowcount == 1
