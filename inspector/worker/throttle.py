"""The distributed reboot throttle: one DLM lock, held from a power-on until the
configured quantum has passed, so that across all worker hosts two power-ons are never
closer than the quantum. 0 disables it.

The last power-on time is also recorded in the store: a holder killed during its wait
loses the lock when its lease expires (possibly before the quantum is over), and the
next holder waits out the rest of the quantum from that record.
"""

import contextlib
import logging
from collections.abc import Iterator

from inspector.coordination import DLM
from inspector.errors import ServiceUnavailable
from inspector.lifecycle import Lifecycle
from inspector.store import WorkerStore

LOG = logging.getLogger(__name__)

LOCK = "inspector-reboot-throttle"
#: Seconds between two attempts at the throttle lock while another worker holds it.
POLL = 0.05


class Interrupted(ServiceUnavailable):
    """Shutdown while waiting for a turn to power on: the power-on did not happen (the
    request goes back to the queue, the node is not failed)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, service="reboot throttle")


class RebootThrottle:
    def __init__(
        self,
        coordinator: DLM,
        store: WorkerStore,
        lifecycle: Lifecycle,
        quantum: float,
        *,
        holder: str = "",
    ) -> None:
        self.coordinator = coordinator
        self.store = store
        self.lifecycle = lifecycle
        self.quantum = quantum
        self.holder = holder or coordinator.member_id

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this worker's turn, yield for the power-on, then keep the lock for
        the quantum. Interrupted (raised) when shutdown comes before the power-on; a
        shutdown after it only cuts the wait short (the record keeps others waiting)."""
        if self.quantum <= 0:
            yield
            return
        lease = None
        while lease is None:
            lease = self.coordinator.try_lease(LOCK)
            if lease is None and self.lifecycle.wait(POLL):
                raise Interrupted("shutting down while waiting for the reboot throttle")
        try:
            self._wait_out_previous()
            self.store.mark_power_on(self.holder)
            yield
            self.lifecycle.wait(self.quantum)
        finally:
            lease.release()

    def _wait_out_previous(self) -> None:
        last = self.store.last_power_on()
        if last is None:
            return
        remaining = self.quantum - (self.store.clock() - last.at).total_seconds()
        if remaining > 0:
            LOG.debug("Reboot throttle: %.3f s left of the last power-on's quantum", remaining)
            if self.lifecycle.wait(min(remaining, self.quantum)):
                raise Interrupted("shutting down while waiting for the reboot throttle")
