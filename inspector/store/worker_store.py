"""What a worker's request threads (handler, tasks, reboot throttle) use of the store, as
a Protocol: the Store itself, or a test's fake. Declarations only; the Store implements
them.
"""

from datetime import datetime
from typing import Any, Protocol

from inspector.store.access import Clock
from inspector.store.introspections import EntryRecord
from inspector.store.nodes import NodeRecord
from inspector.store.requests import RequestRecord
from inspector.store.singletons import MarkRecord
from inspector.store.snapshots import SnapshotRecord
from inspector.store.transitions import Change


class HistoryReads(Protocol):
    """The reads of a node's introspection history (the drift's comparison needs only
    these)."""

    def finished_introspections(
        self, node_uuid: str, *, before: datetime | None = None, limit: int = 1
    ) -> list[EntryRecord]: ...

    def history_data(
        self, node_uuid: str, ident: int
    ) -> tuple[EntryRecord, dict[str, Any]] | None: ...


class WorkerStore(HistoryReads, Protocol):
    @property
    def clock(self) -> Clock: ...

    def load(
        self, node_uuid: str, request_id: str
    ) -> tuple[NodeRecord | None, RequestRecord | None]: ...

    def get_node(self, uuid: str) -> NodeRecord: ...

    def apply(self, change: Change, previous: NodeRecord | None = None) -> NodeRecord: ...

    def reject(
        self, node_uuid: str, request_id: str, event: str, state: str, reason: str
    ) -> None: ...

    def finish_request(self, request_id: str) -> None: ...

    def interrupt_request(self, request_id: str) -> None: ...

    def mark_ran(self, request_id: str) -> None: ...

    def delete_node(self, uuid: str) -> bool: ...

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None: ...

    def store_data(self, node_uuid: str, data: dict[str, Any], *, processed: bool) -> None: ...

    def get_data(self, node_uuid: str, *, processed: bool) -> dict[str, Any] | None: ...

    def save_snapshot(
        self, node_uuid: str, node: dict[str, Any], ports: list[dict[str, Any]] | None
    ) -> None: ...

    def snapshot(self, node_uuid: str) -> SnapshotRecord | None: ...

    def all_rules(self) -> list[dict[str, Any]]: ...

    def keep_introspection(self, node: NodeRecord) -> bool: ...

    def forget_history(self, node_uuid: str) -> int: ...

    def notify_drift(
        self, node_uuid: str, started_at: datetime | None, drift: dict[str, Any]
    ) -> None: ...

    def last_power_on(self) -> MarkRecord | None: ...

    def mark_power_on(self, holder: str) -> None: ...
