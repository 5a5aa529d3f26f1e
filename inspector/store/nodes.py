"""A node's record (what the store answers for a node), and its deletion.

The state changes are `transitions`' (a compare-and-swap on `version`, with the request
row); a node is created by its first change.
"""

import dataclasses
import enum
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, cast

from sqlalchemy import CursorResult
from sqlalchemy import delete as sql_delete
from sqlalchemy.orm import Session

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
    """A node's row as read at one moment; `version` is what a change swaps on."""

    uuid: str
    state: str
    version: int
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    manage_boot: bool
    updated_at: datetime


def delete(session: Session, uuid: str) -> bool:
    """Delete the node; its attributes, data and requests go with it (ON DELETE CASCADE)."""
    result = cast(CursorResult[Any], session.execute(sql_delete(Node).where(Node.uuid == uuid)))
    return result.rowcount == 1
