"""Ironic's REST listings behind the PXE filter of Ironic's own inspection: the nodes
under inspection (the reconcile) and every port (PortListing), each paginated and cut
by `fields=` to what the filter needs. Owns those requests; must not merge their result
into the firewall's lists (ironic_source's IronicInspections does).
"""

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from inspector.errors import ServiceUnavailable
from inspector.lifecycle import Outages

if TYPE_CHECKING:
    from inspector.firewall.ironic_source import IronicInspections

#: Ironic's provision states of a node under inspection (those ironic-pxe-filter allows).
INSPECTING = ("inspect wait", "inspecting")
#: Items per page of a reconcile's listings (Ironic's default [api] max_limit).
PAGE = 1000


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What one listing found."""

    #: UUIDs of the nodes under inspection with one of the filtered inspect interfaces;
    #: None: the nodes were not listed (those known stand).
    inspecting: frozenset[str] | None
    #: Port UUID -> (node UUID, MAC), every port Ironic has; None: the ports were not
    #: listed (those known from the last listing and the notifications stand).
    ports: Mapping[str, tuple[str, str]] | None


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
    needs: the blacklist's poll, in every process every [firewall] blacklist_sync_period,
    and the first one a process needs before it may open.

    Ironic's costliest listing (its API loads each port's node: about 0.25 s of Ironic's
    CPU per 1,000 ports on the test machine, whatever `fields` says), so it runs on a
    thread of its own, apart from the reconcile of the nodes under inspection. A Poller's
    source (call) and target (`name`, `clock`, `replace`): the listing replaces the view's
    ports itself, under a lock, so two never run at once and an election waits for the
    one in flight instead of starting another."""

    name = "Ironic ports"

    def __init__(self, view: "IronicInspections", ironic, outages: Outages | None = None):
        self.view = view
        self.ironic = ironic
        self.outages = outages
        self.clock = view.clock
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        """List now; True when the firewall's lists changed."""
        with self._lock:
            return self._list()

    def ensure(self) -> bool:
        """List unless a listing already replaced the view's ports (a new leader's first
        reconcile: it waits for a first listing in flight, never for a later one); True
        when the lists changed."""
        if self.view.has_ports:
            return False
        with self._lock:
            return False if self.view.has_ports else self._list()

    def replace(self, changed: bool, started: float) -> bool:
        return changed

    def _list(self) -> bool:
        started = self.clock()
        ports = asking(
            self.outages,
            lambda: {
                port.uuid: (port.node_uuid, port.address)
                for port in self.ironic.iter_ports(page_size=PAGE, fields=())
            },
        )
        return self.view.replace(Snapshot(None, ports), started)


def reconcile(
    ironic,
    interfaces: Iterable[str],
    outages: Outages | None = None,
    *,
    ports: PortListing | None = None,
) -> Callable[[], Snapshot]:
    """The whitelist's reconcile: the nodes in each inspection state, each a paginated
    listing filtered by Ironic with `fields=` cut to what the filter needs (never a call
    per node; a few milliseconds at 10,000 nodes). When this process has not listed the
    ports yet (`ports`), that listing first: a leader opens knowing every port."""
    wanted = frozenset(interfaces)

    def fetch() -> Snapshot:
        if ports is not None and ports.ensure():
            ports.view.on_change()
        return Snapshot(asking(outages, _inspecting), None)

    def _inspecting() -> frozenset[str]:
        found = set()
        for state in INSPECTING:
            for node in ironic.iter_nodes(
                page_size=PAGE, fields=("inspect_interface",), provision_state=state
            ):
                if node.inspect_interface in wanted:
                    found.add(node.uuid)
        return frozenset(found)

    return fetch
