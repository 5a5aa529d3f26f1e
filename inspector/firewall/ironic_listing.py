"""Ironic's REST listings behind the PXE filter of Ironic's own inspection: the nodes
under inspection (the reconcile) and every port (PortListing), each paginated and cut
by `fields=` to what the filter needs. Owns those requests; must not merge their result
into the firewall's lists (ironic_source's IronicInspections does).
"""

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from inspector.broker.announcements import PORTS
from inspector.errors import ServiceUnavailable
from inspector.firewall.observer import Observer, moment
from inspector.ironic import IronicClient
from inspector.lifecycle import Outages

if TYPE_CHECKING:
    from inspector.firewall.ironic_source import IronicInspections

#: Ironic's provision states of a node under inspection (those ironic-pxe-filter allows).
INSPECTING = ("inspect wait", "inspecting")
#: Items per page of a reconcile's listings (Ironic's default [api] max_limit).
PAGE = 1000
#: What the reconcile asks of each node under inspection (and its uuid).
FIELDS = ("inspect_interface", "provision_updated_at")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What one listing found."""

    #: UUIDs of the nodes under inspection with one of the filtered inspect interfaces;
    #: None: the nodes were not listed (those known stand).
    inspecting: frozenset[str] | None
    #: Port UUID -> (node UUID, MAC), every port Ironic has; None: the ports were not
    #: listed (those known from the last listing and the notifications stand).
    ports: Mapping[str, tuple[str, str]] | None
    #: Node UUID -> when its provision state changed (epoch seconds), where Ironic says.
    since: Mapping[str, float] = dataclasses.field(default_factory=dict)


def asking(outages: Outages | None, listing: Callable[[], Any]) -> Any:
    """`listing()`; the client retries each request within Ironic's budget ([ironic]
    max_retries x retry_interval): when it gives up, so does the process (`outages`),
    which closes."""
    try:
        return listing()
    except ServiceUnavailable as exc:
        if outages is not None:
            outages.give_up("Ironic", exc.message)
        raise


class PortListing:
    """Every port Ironic has, one paginated listing with `fields=` cut to what the filter
    needs: the blacklist's poll every [firewall] blacklist_sync_period, and the first one
    a process needs before it may open.

    Ironic's costliest listing (its API loads each port's node: about 0.25 s of Ironic's
    CPU per 1,000 ports on the test machine, whatever `fields` says), so it runs on a
    thread of its own, apart from the reconcile of the nodes under inspection, and once
    per period for the whole cluster: the leader lists and `share`s the result on the
    firewall channel; a follower that heard it lately (`hear`) skips its own turn, and
    lists by itself only when the leader's listings stop reaching it (no
    channel, a leader gone). A Poller's source (call) and target (`name`, `clock`,
    `replace`): the listing replaces the view's ports itself, under a lock, so two never
    run at once and an election waits for the one in flight instead of starting another."""

    name = "Ironic ports"

    def __init__(
        self,
        view: "IronicInspections",
        ironic: IronicClient,
        outages: Outages | None = None,
        *,
        period: float = 0.0,
        leading: Callable[[], bool] = lambda: False,
        share: Callable[[str, dict], None] | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.view = view
        self.ironic = ironic
        self.outages = outages
        self.clock = view.clock
        #: [firewall] blacklist_sync_period: how old a set may be when a leader opens.
        self.period = period
        self.leading = leading
        self.share = share
        self.observer = observer or Observer()
        #: Listings of every port this process made (each costs Ironic the most).
        self.listings = 0
        self._lock = threading.Lock()
        self._heard_at: float | None = None  # the leader's last listing heard (clock)
        self._ports_at: float | None = None  # the ports last replaced (clock)

    def __call__(self) -> bool:
        """List now, unless this process follows and heard the leader's listing within
        two periods (the leader's run one period after its last listing ended, and a
        listing of 10,000 ports takes seconds); True when the firewall's lists changed."""
        if not self.leading() and self._is_recent(self._heard_at, 2 * self.period):
            return False
        with self._lock:
            return self._list()

    def ensure(self) -> bool:
        """List unless the view's ports are no older than one period (a new leader's
        first reconcile: it waits for a first listing in flight, never for a later one);
        True when the lists changed."""
        if self._is_fresh():
            return False
        with self._lock:
            return False if self._is_fresh() else self._list()

    def replace(self, changed: bool, started: float) -> bool:
        return changed

    def hear(self, event_type: str, payload: dict) -> None:
        """A channel handler: the leader's listing (PORTS) replaces a follower's ports,
        as if it had listed them itself when the leader did."""
        if event_type != PORTS or self.leading():
            return
        ports = payload.get("ports")
        if not isinstance(ports, dict):
            return
        age = max(0.0, time.time() - float(payload.get("listed_at") or time.time()))
        started = self.clock() - age
        snapshot = {uuid: (node, mac) for uuid, (node, mac) in ports.items()}
        self._heard_at = self._ports_at = self.clock()
        if self.view.replace(Snapshot(None, snapshot), started):
            self.view.on_change()

    def _is_fresh(self) -> bool:
        # Only a new leader's first reconcile (leading() not yet true) asks for ports no
        # older than a period: the leader's own turn keeps them current after that.
        if self.period <= 0 or self.leading():
            return self.view.has_ports
        return self.view.has_ports and self._is_recent(self._ports_at, self.period)

    def _is_recent(self, moment: float | None, within: float) -> bool:
        return moment is not None and within > 0 and self.clock() - moment <= within

    def _list(self) -> bool:
        started, listed_at = self.clock(), time.time()
        ports = asking(
            self.outages,
            lambda: {
                port.uuid: (port.node_uuid, port.address)
                for port in self.ironic.iter_ports(page_size=PAGE, fields=())
            },
        )
        self.listings += 1
        self.observer.polled("ports", self.clock() - started)
        self._ports_at = started
        if self.share is not None and self.leading():
            self.share(PORTS, {"ports": ports, "listed_at": listed_at})
        return self.view.replace(Snapshot(None, ports), started)


def reconcile(
    ironic: IronicClient,
    interfaces: Iterable[str],
    outages: Outages | None = None,
    *,
    ports: PortListing | None = None,
    observer: Observer | None = None,
    spent: Callable[[float], None] = lambda seconds: None,
) -> Callable[[], Snapshot]:
    """The whitelist's reconcile: the nodes in each inspection state, each a paginated
    listing filtered by Ironic with `fields=` cut to what the filter needs (never a call
    per node; a few milliseconds at 10,000 nodes). When this process has not listed the
    ports yet (`ports`), that listing first: a leader opens knowing every port."""
    wanted = frozenset(interfaces)
    observer = observer or Observer()

    def fetch() -> Snapshot:
        if ports is not None and ports.ensure():
            ports.view.on_change()
        began = time.monotonic()
        found = asking(outages, _inspecting)
        seconds = time.monotonic() - began
        observer.polled("nodes", seconds)
        spent(seconds)
        since = {uuid: at for uuid, stamp in found.items() if (at := moment(stamp)) is not None}
        return Snapshot(frozenset(found), None, since)

    def _inspecting() -> dict[str, str | None]:
        found = {}
        for state in INSPECTING:
            for node in ironic.iter_nodes(page_size=PAGE, fields=FIELDS, provision_state=state):
                if node.inspect_interface in wanted:
                    found[node.uuid] = node.provision_updated_at
        return found

    return fetch
