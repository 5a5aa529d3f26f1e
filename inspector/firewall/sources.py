"""The polls behind the firewall's lists: whole snapshots fetched from Ironic (every
port) and from the store (the nodes under introspection), and the Poller that puts each
into its PollTarget (firewall.lists) on a thread of its own.

Owns when and how a source is polled; must not merge (firewall.lists) nor apply anything
(the manager does).
"""

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from inspector.errors import InspectorError, ServiceUnavailable
from inspector.firewall.lists import PollTarget
from inspector.ironic import IronicClient
from inspector.lifecycle import Lifecycle, Outages
from inspector.machine import ACTIVE_STATES

if TYPE_CHECKING:  # the store imports SQLAlchemy, which a PXE filter never does
    from inspector.store import Store

LOG = logging.getLogger(__name__)

#: Nodes per page when the whitelist is polled from the store.
STORE_PAGE = 500
#: Ports per page when the blacklist is polled from Ironic.
IRONIC_PAGE = 1000
#: Seconds between two looks at a period that may change (a source of both lists polls
#: more often while its process leads).
PERIOD_STEP = 1.0


def ironic_ports(ironic: IronicClient) -> Callable[[], dict[str, list[str]]]:
    """Blacklist snapshot: port UUID -> [MAC] of every port Ironic has (paginated)."""

    def fetch() -> dict[str, list[str]]:
        return {port.uuid: [port.address] for port in ironic.iter_ports(page_size=IRONIC_PAGE)}

    return fetch


def introspected_macs(store: "Store") -> Callable[[], dict[str, list[str]]]:
    """Whitelist snapshot: node UUID -> lookup MACs of every node in an active state."""
    states = sorted(str(state) for state in ACTIVE_STATES)

    def fetch() -> dict[str, list[str]]:
        result, marker = {}, None
        while True:
            nodes = store.list_nodes(limit=STORE_PAGE, marker=marker, states=states)
            for node in nodes:
                result[node.uuid] = store.attributes(node.uuid).get("mac", [])
            if len(nodes) < STORE_PAGE:
                return result
            marker = nodes[-1].uuid

    return fetch


#: What one poll fetches for its target.
Fetched = TypeVar("Fetched")


class Poller(Generic[Fetched]):
    """Polls one source every `period` seconds (or `period()`, looked at every
    PERIOD_STEP) into its PollTarget, in its own thread; `active()` false skips a turn
    (the whitelist is only needed by the leader)."""

    def __init__(
        self,
        target: PollTarget[Fetched],
        fetch: Callable[[], Fetched],
        period: float | Callable[[], float],
        *,
        on_change: Callable[[], None],
        lifecycle: Lifecycle,
        outages: Outages | None = None,
        service: str = "",
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.target = target
        self.fetch = fetch
        self.period = period
        self.on_change = on_change
        self.lifecycle = lifecycle
        self.outages = outages
        #: The backend polled, as Outages names it ("Ironic", "database").
        self.service = service
        self.active = active
        self._now = threading.Event()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> bool:
        """One poll, now, in the caller's thread; False when the source failed."""
        started = self.target.clock()
        try:
            snapshot = self.fetch()
        except ServiceUnavailable as exc:
            LOG.warning("Cannot poll the %s: %s", self.target.name, exc.message)
            if self.outages is not None and exc.service:
                self.outages.failed(exc.service, exc.message)
            return False
        except InspectorError as exc:  # our own error: one line (a stack with debug on)
            LOG.error(
                "Polling the %s failed: %s",
                self.target.name,
                exc.message,
                exc_info=LOG.isEnabledFor(logging.DEBUG),
            )
            return False
        except Exception:
            LOG.exception("Polling the %s failed", self.target.name)
            return False
        if self.outages is not None and self.service:
            self.outages.recovered(self.service)
        if self.target.replace(snapshot, started):
            self.on_change()
        return True

    def wake(self) -> None:
        """Poll at once (in the poller's thread)."""
        self._now.set()

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"firewall-{self.target.name}", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        shutdown = self.lifecycle.shutdown
        while not shutdown.is_set() and not self._halt.is_set():
            if self.active() and self._period() > 0:
                self.poll()
            self._wait()

    def _period(self) -> float:
        return self.period() if callable(self.period) else self.period

    def _wait(self) -> None:
        """Until wake() or the end of the period (a changing one looked at every step)."""
        step = PERIOD_STEP if callable(self.period) else math.inf
        began = time.monotonic()
        while not self._halt.is_set():
            period = self._period()
            left = period - (time.monotonic() - began) if period > 0 else step
            if left <= 0 or self._now.wait(min(left, step)):
                break
        self._now.clear()

    def stop(self) -> None:
        """No more polls; one in flight finishes on its own (a daemon thread)."""
        self._halt.set()
        self._now.set()
