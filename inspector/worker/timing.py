"""Where a worker's time goes: the backends (database, DLM, queue, Ironic) as its request
threads see them, each call's seconds handed to a `Record` hook (the worker's metrics).

Used only when the worker serves metrics. Each wrapper implements, method by method,
what the request threads call: the DLM's `try_lock` is timed on entering and leaving
its context; the queue's `put` and the settling of a delivery (ack, retry,
dead-letter) are timed, not the wait for one, which is idle time; reading the store's
clock is no database call.
"""

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TypeVar

from inspector.broker import Delivery, Queue
from inspector.broker.message import Request
from inspector.coordination import DLM, Lease
from inspector.ironic import IronicClient
from inspector.ironic.forwarding import Forwarding
from inspector.store import Change, NodeRecord, RequestRecord, Store, WorkerStore
from inspector.store.introspections import EntryRecord
from inspector.store.singletons import MarkRecord
from inspector.store.snapshots import SnapshotRecord

#: Takes a backend's name and the seconds one call to it took.
Record = Callable[[str, float], None]
T = TypeVar("T")

#: The backends' names, the `backend` label of the worker's metrics.
DATABASE = "database"
DLM_BACKEND = "DLM"
QUEUE = "queue"
IRONIC = "Ironic"


class Timer:
    """Runs calls to one backend, handing each one's seconds to `record`."""

    def __init__(self, backend: str, record: Record) -> None:
        self.backend = backend
        self.record = record

    def __call__(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.record(self.backend, time.perf_counter() - started)


class TimedStore:
    """The store calls of the request threads (handler, tasks, reboot throttle)."""

    def __init__(self, store: Store, record: Record) -> None:
        self._store = store
        self._timed = Timer(DATABASE, record)
        self.clock = store.clock

    def load(
        self, node_uuid: str, request_id: str
    ) -> tuple[NodeRecord | None, RequestRecord | None]:
        return self._timed(lambda: self._store.load(node_uuid, request_id))

    def get_node(self, uuid: str) -> NodeRecord:
        return self._timed(lambda: self._store.get_node(uuid))

    def apply(self, change: Change, previous: NodeRecord | None = None) -> NodeRecord:
        return self._timed(lambda: self._store.apply(change, previous))

    def reject(self, node_uuid: str, request_id: str, event: str, state: str, reason: str) -> None:
        self._timed(lambda: self._store.reject(node_uuid, request_id, event, state, reason))

    def finish_request(self, request_id: str) -> None:
        self._timed(lambda: self._store.finish_request(request_id))

    def interrupt_request(self, request_id: str) -> None:
        self._timed(lambda: self._store.interrupt_request(request_id))

    def mark_ran(self, request_id: str) -> None:
        self._timed(lambda: self._store.mark_ran(request_id))

    def delete_node(self, uuid: str) -> bool:
        return self._timed(lambda: self._store.delete_node(uuid))

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None:
        self._timed(lambda: self._store.set_attributes(node_uuid, attributes))

    def store_data(self, node_uuid: str, data: dict, *, processed: bool) -> None:
        self._timed(lambda: self._store.store_data(node_uuid, data, processed=processed))

    def get_data(self, node_uuid: str, *, processed: bool) -> dict | None:
        return self._timed(lambda: self._store.get_data(node_uuid, processed=processed))

    def save_snapshot(self, node_uuid: str, node: dict, ports: list[dict] | None) -> None:
        self._timed(lambda: self._store.save_snapshot(node_uuid, node, ports))

    def snapshot(self, node_uuid: str) -> SnapshotRecord | None:
        return self._timed(lambda: self._store.snapshot(node_uuid))

    def all_rules(self) -> list[dict]:
        return self._timed(self._store.all_rules)

    def keep_introspection(self, node: NodeRecord) -> bool:
        return self._timed(lambda: self._store.keep_introspection(node))

    def finished_introspections(
        self, node_uuid: str, *, before: datetime | None = None, limit: int = 1
    ) -> list[EntryRecord]:
        return self._timed(
            lambda: self._store.finished_introspections(node_uuid, before=before, limit=limit)
        )

    def history_data(self, node_uuid: str, ident: int) -> tuple[EntryRecord, dict] | None:
        return self._timed(lambda: self._store.history_data(node_uuid, ident))

    def forget_history(self, node_uuid: str) -> int:
        return self._timed(lambda: self._store.forget_history(node_uuid))

    def notify_drift(self, node_uuid: str, started_at: datetime | None, drift: dict) -> None:
        self._timed(lambda: self._store.notify_drift(node_uuid, started_at, drift))

    def last_power_on(self) -> MarkRecord | None:
        return self._timed(self._store.last_power_on)

    def mark_power_on(self, holder: str) -> None:
        self._timed(lambda: self._store.mark_power_on(holder))


class TimedDLM:
    """DLM: every call timed; lock contexts timed when entered and when left."""

    def __init__(self, dlm: DLM, record: Record) -> None:
        self._dlm = dlm
        self._timed = Timer(DLM_BACKEND, record)

    @property
    def member_id(self) -> str:
        return self._dlm.member_id

    @property
    def lease_seconds(self) -> float:
        return self._dlm.lease_seconds

    @property
    def is_single_process(self) -> bool:
        return self._dlm.is_single_process

    @property
    def is_single_host(self) -> bool:
        return self._dlm.is_single_host

    def start(self) -> None:
        self._timed(self._dlm.start)

    def stop(self) -> None:
        self._timed(self._dlm.stop)

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        context = self._dlm.try_lock(name)
        held = self._timed(context.__enter__)
        try:
            yield held
        except BaseException as exc:
            if not self._timed(
                functools.partial(context.__exit__, type(exc), exc, exc.__traceback__)
            ):
                raise
        else:
            self._timed(lambda: context.__exit__(None, None, None))

    def try_lease(self, name: str) -> Lease | None:
        return self._timed(lambda: self._dlm.try_lease(name))

    def join(self, group: str) -> None:
        self._timed(lambda: self._dlm.join(group))

    def leave(self, group: str) -> None:
        self._timed(lambda: self._dlm.leave(group))

    def members(self, group: str) -> frozenset[str]:
        return self._timed(lambda: self._dlm.members(group))


class TimedDelivery:
    """Delivery: its settling timed."""

    def __init__(self, delivery: Delivery, timed: Timer) -> None:
        self._delivery = delivery
        self._timed = timed

    @property
    def request(self) -> Request | None:
        return self._delivery.request

    @property
    def error(self) -> str | None:
        return self._delivery.error

    def ack(self) -> None:
        self._timed(self._delivery.ack)

    def retry(self, delay: float, *, renewed: bool = False) -> None:
        self._timed(lambda: self._delivery.retry(delay, renewed=renewed))

    def dead_letter(self, reason: str) -> None:
        self._timed(lambda: self._delivery.dead_letter(reason))


class TimedQueue:
    """Queue: `put` and the settling of each delivery timed; not the wait in `get`."""

    def __init__(self, queue: Queue, record: Record) -> None:
        self._queue = queue
        self._timed = Timer(QUEUE, record)

    def put(self, request: Request) -> None:
        self._timed(lambda: self._queue.put(request))

    def get(self, timeout: float, *, starts: bool = True) -> TimedDelivery | None:
        delivery = self._queue.get(timeout, starts=starts)
        return None if delivery is None else TimedDelivery(delivery, self._timed)


class TimedIronic(Forwarding):
    """IronicClient: every call timed."""

    def __init__(self, ironic: IronicClient, record: Record) -> None:
        self._ironic = ironic
        self._timed = Timer(IRONIC, record)

    def _run(self, call: Callable[[IronicClient], T]) -> T:
        return self._timed(lambda: call(self._ironic))


def timed(
    record: Record | None, store: Store, dlm: DLM, queue: Queue, ironic: IronicClient | None
) -> tuple[WorkerStore, DLM, Queue, IronicClient | None]:
    """The backends as the request threads see them: each call's seconds handed to
    `record`; unchanged without one (a worker that serves no metrics)."""
    if record is None:
        return store, dlm, queue, ironic
    return (
        TimedStore(store, record),
        TimedDLM(dlm, record),
        TimedQueue(queue, record),
        None if ironic is None else TimedIronic(ironic, record),
    )
