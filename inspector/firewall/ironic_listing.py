"""Ironic's REST listings behind the PXE filter of Ironic's own inspection: the nodes
under inspection (the reconcile) and every port (PortListing), each paginated and cut
by `fields=` to what the filter needs. Owns those requests; must not merge their result
into the firewall's lists (ironic_source's IronicInspections does).
"""

import dataclasses
import datetime
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from inspector.broker.announcements import PORTS
from inspector.errors import ServiceUnavailable
from inspector.firewall.observer import Observer, moment
from inspector.ironic import IronicClient
from inspector.ironic.model import timestamp
from inspector.lifecycle import Outages

if TYPE_CHECKING:
    from inspector.firewall.ironic_source import IronicInspections

LOG = logging.getLogger(__name__)

#: Ironic's provision states of a node under inspection (those ironic-pxe-filter allows).
INSPECTING = ("inspect wait", "inspecting")
#: Items per page of a reconcile's listings (Ironic's default [api] max_limit).
PAGE = 1000
#: What the reconcile asks of each node under inspection (and its uuid).
FIELDS = ("inspect_interface", "provision_updated_at")
#: Seconds a listing of changed ports reaches back before the later of the newest change
#: the last listing saw and the moment it began (this host's clock): Ironic stamps a
#: change before its transaction commits (a slow commit shows an older stamp later), and
#: clocks differ a little.
SKEW = 60.0


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
    """Ironic's ports for the blacklist, each [firewall] blacklist_sync_period, and the
    first listing a process needs before it may open: every [firewall]
    full_port_listing_period a full one (every port, paginated, `fields=` cut to what
    the filter needs; it alone sees deletions), in between the ports created or updated
    since the newest change the view holds (Ironic's listing sorted by its timestamps,
    reaching SKEW seconds further back), skipped while Ironic's notifications flow
    (`notified`: they carry the changes).

    The full listing is Ironic's costliest (its API loads each port's node: about 0.25 s
    of Ironic's CPU per 1,000 ports on the test machine, whatever `fields` says), so it
    runs on a thread of its own, apart from the reconcile of the nodes under inspection,
    and once per period for the whole cluster: the leader lists and `share`s its view of
    the ports on the firewall channel each period; a follower that heard it lately
    (`hear`) skips its own turn, and lists by itself only when the leader's shares stop
    reaching it (no channel, a leader gone). A Poller's source (call) and target
    (`name`, `clock`, `replace`): the listing changes the view's ports itself, under a
    lock, so two never run at once and an election waits for the one in flight instead
    of starting another."""

    name = "Ironic ports"

    def __init__(
        self,
        view: "IronicInspections",
        ironic: IronicClient,
        outages: Outages | None = None,
        *,
        period: float = 0.0,
        full_period: float = 0.0,
        leading: Callable[[], bool] = lambda: False,
        notified: Callable[[], bool] = lambda: False,
        share: Callable[[str, dict], None] | None = None,
        observer: Observer | None = None,
        utcnow: Callable[[], datetime.datetime] | None = None,
    ) -> None:
        self.view = view
        self.ironic = ironic
        self.outages = outages
        self.clock = view.clock
        #: [firewall] blacklist_sync_period: how old a set may be when a leader opens.
        self.period = period
        #: [firewall] full_port_listing_period: how old its last full listing may be
        #: (0: every listing is a full one).
        self.full_period = full_period
        self.leading = leading
        self.notified = notified
        self.share = share
        self.observer = observer or Observer()
        #: This host's wall clock, naive UTC as Ironic's stamps.
        self.utcnow = utcnow or _utcnow
        #: Listings of every port this process made (each costs Ironic the most).
        self.listings = 0
        #: Listings of the ports changed since the last one this process made.
        self.deltas = 0
        self._lock = threading.Lock()
        self._heard_at: float | None = None  # the leader's last share heard (clock)
        self._ports_at: float | None = None  # the ports last listed (clock)
        self._full_at: float | None = None  # the last full listing began (clock)
        #: The later of Ironic's newest port change the view holds (its clock) and when the
        #: last listing began (this host's): the next listing of changes reaches SKEW
        #: before it (naive UTC).
        self._since: datetime.datetime | None = None
        #: False once Ironic's database proved unable to sort by updated_at usefully.
        self._sortable = True

    def __call__(self) -> bool:
        """List now, unless this process follows and heard the leader's share within
        two periods (the leader's run one period after its last listing ended, and a
        listing of 10,000 ports takes seconds); True when the firewall's lists changed.
        The leader shares its ports after each turn, listing or not."""
        if not self.leading() and self._is_recent(self._heard_at, 2 * self.period):
            return False
        with self._lock:
            started, listed_at = self.clock(), time.time()
            changed = self._refresh(skip_changes=self.notified())
            if self.share is not None and self.leading() and self.view.has_ports:
                self.share(PORTS, self._payload(started, listed_at))
            return changed

    def ensure(self) -> bool:
        """List unless the view's ports are no older than one period and its last full
        listing no older than full_period (a new leader's first reconcile: it waits for a
        listing in flight, never for a later one); True when the lists changed."""
        if self._is_fresh():
            return False
        with self._lock:
            return False if self._is_fresh() else self._refresh()

    def replace(self, changed: bool, started: float) -> bool:
        return changed

    def hear(self, event_type: str, payload: dict) -> None:
        """A channel handler: the leader's share (PORTS) replaces a follower's ports, as
        if it had listed them itself when the leader did, with the leader's last full
        listing's age and newest change (the next listing of changes starts there)."""
        if event_type != PORTS or self.leading():
            return
        ports = payload.get("ports")
        if not isinstance(ports, dict):
            return
        now, clock = time.time(), self.clock()
        try:
            started = clock - max(0.0, now - float(payload.get("listed_at") or now))
            full_at = payload.get("full_at")
            full = None if full_at is None else clock - max(0.0, now - float(full_at))
            snapshot = {uuid: (node, mac) for uuid, (node, mac) in ports.items()}
        except (TypeError, ValueError):
            LOG.warning("Ignored a malformed listing of Ironic's ports from the channel")
            return
        self._full_at, self._since = full, timestamp(payload.get("since"))
        self._heard_at = self._ports_at = clock
        if self.view.replace(Snapshot(None, snapshot), started):
            self.view.on_change()

    def _payload(self, started: float, listed_at: float) -> dict:
        full_at = None if self._full_at is None else listed_at - (started - self._full_at)
        return {
            "ports": self.view.ports(),
            "listed_at": listed_at,
            "full_at": full_at,
            "since": None if self._since is None else self._since.isoformat(),
        }

    def _is_fresh(self) -> bool:
        # Only a new leader's first reconcile (leading() not yet true) asks for ports no
        # older than a period: the leader's own turn keeps them current after that.
        if self.period <= 0 or self.leading():
            return self.view.has_ports
        return (
            self.view.has_ports
            and self._is_recent(self._ports_at, self.period)
            and (self.full_period <= 0 or self._is_recent(self._full_at, self.full_period))
        )

    def _is_recent(self, moment: float | None, within: float) -> bool:
        return moment is not None and within > 0 and self.clock() - moment <= within

    def _full_due(self) -> bool:
        return (
            not self.view.has_ports
            or self._since is None
            or not self._sortable
            or not self._is_recent(self._full_at, self.full_period)
        )

    def _refresh(self, *, skip_changes: bool = False) -> bool:
        if self._full_due():
            return self._list()
        return False if skip_changes else self._list_changes()

    def _list(self) -> bool:
        started, began = self.clock(), self.utcnow()
        # With either period 0 no listing of changes follows: where it starts not asked.
        changes = self.full_period > 0 and self.period > 0

        def listing() -> tuple[datetime.datetime | None, dict[str, tuple[str, str]]]:
            # The newest change first: one made during the listing is listed again later.
            newest = self.ironic.last_port_change() if changes else None
            ports = self.ironic.iter_ports(page_size=PAGE, fields=())
            return newest, {port.uuid: (port.node_uuid, port.address) for port in ports}

        newest, ports = asking(self.outages, listing)
        self._since = max(newest or began, began) if changes else None
        self.listings += 1
        self.observer.polled("ports", self.clock() - started)
        self._ports_at = self._full_at = started
        return self.view.replace(Snapshot(None, ports), started)

    def _list_changes(self) -> bool:
        since = self._since
        assert since is not None  # _full_due() otherwise
        started, began = self.clock(), self.utcnow()
        reach = since - datetime.timedelta(seconds=SKEW)
        found = asking(self.outages, lambda: self.ironic.changed_ports(reach))
        self.observer.polled("port_changes", self.clock() - started)
        if found is None:
            LOG.warning(
                "Ironic's database sorts never-updated ports first: every listing of "
                "Ironic's ports for the PXE filter is a full one"
            )
            self._sortable = False
            return self._list()
        self.deltas += 1
        self._ports_at = started
        # Stamps older than this listing's start minus SKEW will not show up any more: a
        # burst of changes is read again for SKEW seconds, not until the next change.
        self._since = max([since, began, *(stamp for _, stamp in found)])
        return self.view.update_ports({p.uuid: (p.node_uuid, p.address) for p, _ in found})


def _utcnow() -> datetime.datetime:
    """Now, naive UTC, as Ironic's stamps."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


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
