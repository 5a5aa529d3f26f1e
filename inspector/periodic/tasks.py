"""The clean-up tasks a periodic leader runs. Each selects nodes and only enqueues
requests for the workers (time-out, delete, expire); none changes a node itself. The
Ironic history task (inspector.periodic.ironic_history) runs beside them when enabled.

Every enqueue is preceded by a leadership check, so a deposed leader stops at once.
"""

import dataclasses
import logging
from collections.abc import Callable
from datetime import timedelta

from oslo_config import cfg

from inspector.broker import Publisher
from inspector.broker.message import DELETE, EXPIRE, Request
from inspector.coordination.election import Leadership
from inspector.ironic import IronicClient
from inspector.machine import Event, State
from inspector.periodic.ironic_history import IronicHistory
from inspector.periodic.periods import periods
from inspector.store import Store

LOG = logging.getLogger(__name__)

#: Page size of the store and Ironic listings of the synchronisation task.
PAGE_SIZE = 1000


@dataclasses.dataclass(frozen=True)
class PeriodicTask:
    name: str
    period: float
    run: Callable[[Leadership], str]  # returns a one-line outcome for the run record


class CleanUp:
    """The three clean-up tasks of the design, on one store, queue and Ironic."""

    def __init__(
        self,
        store: Store,
        queue: Publisher,
        ironic: IronicClient | None,
        conf: cfg.ConfigOpts,
        *,
        drift_found: Callable[[dict[str, int]], None] | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.ironic = ironic
        self.conf = conf
        #: Counts the drifts the Ironic history task finds (the worker's metric).
        self.drift_found = drift_found

    def tasks(self) -> list[PeriodicTask]:
        """The clean-up tasks, and the Ironic history task when enabled (with an Ironic
        and stored data)."""
        period = periods(self.conf)
        tasks = [
            PeriodicTask("timeout", period["timeout"], self.timeout),
            PeriodicTask("ironic_sync", period["ironic_sync"], self.ironic_sync),
            PeriodicTask("expiry", period["expiry"], self.expiry),
        ]
        group = self.conf.ironic_history
        if group.enabled and self.ironic is not None:
            if self.conf.processing.store_data != "database":
                LOG.warning("[ironic_history] enabled without [processing] store_data = database")
            else:
                history = IronicHistory(self.store, self.ironic, drift_found=self.drift_found)
                tasks.append(PeriodicTask("ironic_history", group.period, history.run))
        return tasks

    def _enqueue(self, leadership: Leadership, uuids: list[str], event: str) -> int:
        for uuid in uuids:
            leadership.check()
            self.queue.put(Request(node_uuid=uuid, event=event))
        return len(uuids)

    def timeout(self, leadership: Leadership) -> str:
        """Introspections running for longer than [DEFAULT] timeout -> `timeout`."""
        before = self.store.clock() - timedelta(seconds=self.conf.timeout)
        count = self._enqueue(leadership, self.store.timed_out_nodes(before), Event.TIMEOUT)
        if count:
            LOG.info("Timed out %d introspection(s) older than %d s", count, self.conf.timeout)
        return f"{count} timed out"

    def expiry(self, leadership: Leadership) -> str:
        """Ended introspections older than report_expiration -> `expire` (their status
        and stored data go); old task run records and delivered notifications too, and
        each node's history beyond [processing] history_keep."""
        before = self.store.clock() - timedelta(seconds=self.conf.clean_up.report_expiration)
        count = self._enqueue(leadership, self.store.expired_nodes(before), EXPIRE)
        leadership.check()
        forgotten = self.store.forget_runs(before)
        delivered = self.store.forget_notifications(before)
        leadership.check()
        pruned = self.store.prune_history(self.conf.processing.history_keep)
        if count:
            LOG.info("Expiring %d introspection(s) that ended before %s", count, before)
        return (
            f"{count} expired, {forgotten} run records, {delivered} notifications and "
            f"{pruned} past introspections forgotten"
        )

    def ironic_sync(self, leadership: Leadership) -> str:
        """Nodes the store has and Ironic no longer has -> `delete`.

        The store is read before Ironic, so a node enrolled in Ironic in between is
        seen there; nodes being enrolled by discovery are not in Ironic yet: skipped.
        """
        if self.ironic is None:
            return "no Ironic"
        ours: set[str] = set()
        after = None
        while page := self.store.node_uuids(
            limit=PAGE_SIZE, after=after, skip_states=(State.ENROLLING,)
        ):
            ours.update(page)
            after = page[-1]
            leadership.check()
        if not ours:
            return "0 removed"
        for node in self.ironic.iter_nodes(page_size=PAGE_SIZE, fields=["uuid"]):
            ours.discard(node.uuid)
        count = self._enqueue(leadership, sorted(ours), DELETE)
        if count:
            LOG.info("Removing %d node(s) that Ironic no longer has", count)
        return f"{count} removed"
