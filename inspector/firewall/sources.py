"""Where the firewall's lists come from: whole snapshots polled from Ironic (ports) and
from the store (nodes under introspection), and single changes heard on the channel.

Owns merging the two into one MacList each; must not apply anything (the manager does).
"""

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from inspector.broker import channels
from inspector.errors import InspectorError, ServiceUnavailable
from inspector.ironic import IronicClient
from inspector.lifecycle import Lifecycle, Outages
from inspector.machine import ACTIVE_STATES
from inspector.macs import normalise_mac

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


def _normal(macs: Iterable[str], owner: str) -> frozenset[str]:
    result = set()
    for mac in macs:
        try:
            result.add(normalise_mac(mac))
        except ValueError as exc:
            LOG.warning("Ignoring a MAC of %s: %s", owner, exc)
    return frozenset(result)


class MacList:
    """MACs by owner (a node UUID for the whitelist, a port UUID for the blacklist).

    A snapshot replaces everything, except owners the channel changed after the
    snapshot's poll began: a poll that started before a port was announced must not
    take the port away again.
    """

    def __init__(self, name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.clock = clock
        self._guard = threading.Lock()
        self._owners: dict[str, frozenset[str]] = {}
        # owner -> (when the channel changed it, its MACs or None when removed)
        self._heard: dict[str, tuple[float, frozenset[str] | None]] = {}
        self._macs: frozenset[str] = frozenset()
        #: Wall-clock time of the last complete poll; None: never polled.
        self.synced_at: float | None = None
        #: Wall-clock time of the last change heard on the channel.
        self.heard_at: float | None = None

    def macs(self) -> frozenset[str]:
        return self._macs

    def set(self, owner: str, macs: Iterable[str]) -> bool:
        """The channel says owner has macs now; True when the list changed."""
        return self._hear(owner, _normal(macs, owner))

    def drop(self, owner: str) -> bool:
        """The channel says owner is gone; True when the list changed."""
        return self._hear(owner, None)

    def _hear(self, owner: str, macs: frozenset[str] | None) -> bool:
        with self._guard:
            self._heard[owner] = (self.clock(), macs)
            self.heard_at = time.time()
            if macs:
                self._owners[owner] = macs
            else:
                self._owners.pop(owner, None)
            return self._update()

    def replace(self, snapshot: Mapping[str, Iterable[str]], started: float) -> bool:
        """A poll that began at `started` (this list's clock) found `snapshot`."""
        owners = {owner: _normal(macs, owner) for owner, macs in snapshot.items()}
        with self._guard:
            for owner, (at, macs) in list(self._heard.items()):
                if at < started:
                    del self._heard[owner]  # the snapshot is newer
                elif macs:
                    owners[owner] = macs
                else:
                    owners.pop(owner, None)
            self._owners = {owner: macs for owner, macs in owners.items() if macs}
            self.synced_at = time.time()
            return self._update()

    def _update(self) -> bool:
        macs = frozenset().union(*self._owners.values())
        changed, self._macs = macs != self._macs, macs
        if changed:
            LOG.debug("%s: %d MACs", self.name, len(macs))
        return changed


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
Taken_contra = TypeVar("Taken_contra", contravariant=True)


class PollTarget(Protocol[Taken_contra]):
    """Where a Poller puts what it fetched: a MacList, or a view of Ironic's (the nodes
    under inspection, every port)."""

    name: str

    def clock(self) -> float: ...

    def replace(self, snapshot: Taken_contra, started: float) -> bool:
        """Take `snapshot`, fetched from `started` on; whether the lists changed."""
        ...


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


class Feed:
    """The channel's handler: announcements into the lists; status requests to `ask`."""

    def __init__(
        self,
        whitelist: MacList,
        blacklist: MacList,
        *,
        on_change: Callable[[], None],
        on_status_request: Callable[[str], None] = lambda request_id: None,
    ) -> None:
        self.whitelist = whitelist
        self.blacklist = blacklist
        self.on_change = on_change
        self.on_status_request = on_status_request

    def __call__(self, event_type: str, payload: dict) -> None:
        changed = False
        if event_type == channels.INTROSPECTION_STARTED:
            changed = self.whitelist.set(payload["node_uuid"], payload.get("macs") or [])
        elif event_type == channels.INTROSPECTION_ENDED:
            changed = self.whitelist.drop(payload["node_uuid"])
        elif event_type == channels.PORT_ADDED:
            changed = self.blacklist.set(payload["uuid"], [payload["address"]])
        elif event_type == channels.PORT_REMOVED:
            changed = self.blacklist.drop(payload["uuid"])
        elif event_type in channels.IRONIC_PORT_ADDED + channels.IRONIC_PORT_REMOVED:
            port = payload.get("ironic_object.data") or {}
            if event_type in channels.IRONIC_PORT_ADDED:
                changed = self.blacklist.set(port["uuid"], [port["address"]])
            else:
                changed = self.blacklist.drop(port["uuid"])
        elif event_type == channels.STATUS_REQUEST:
            self.on_status_request(str(payload.get("request_id", "")))
        if changed:
            LOG.info("Firewall lists changed by %s", event_type)
            self.on_change()
