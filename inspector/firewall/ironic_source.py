"""The firewall's lists when Ironic inspects by itself ([pxe_filter] whitelist_source =
ironic, Ironic 2026.1 and later): Ironic's nodes under inspection and its ports, from
listings through Ironic's REST API (the nodes' reconcile, the ports' listing) and from
Ironic's notifications; and whether MACs Ironic does not know are answered, as
ironic-pxe-filter decides it.

Owns that view of Ironic and its merging into the two MacLists (whitelist: node UUID ->
the MACs of its ports while it is under inspection; blacklist: port UUID -> its MAC, every
port); must not apply anything (the manager does).
"""

import collections
import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oslo_config import cfg

from inspector.errors import ServiceUnavailable
from inspector.firewall.sources import MacList
from inspector.lifecycle import Outages

LOG = logging.getLogger(__name__)

#: Ironic's provision states of a node under inspection (those ironic-pxe-filter allows).
INSPECTING = ("inspect wait", "inspecting")
#: Items per page of a reconcile's listings (Ironic's default [api] max_limit).
PAGE = 1000
#: Prefix of Ironic's notifications of a provision state change (start, end, success,
#: error): each carries the node as it is then.
PROVISION_SET = "baremetal.node.provision_set."
#: A node deleted: Ironic deletes its ports without a notification of their own.
NODE_DELETED = ("baremetal.node.delete.end",)
PORT_CHANGED = ("baremetal.port.create.end", "baremetal.port.update.end")
PORT_DELETED = ("baremetal.port.delete.end",)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What one listing found."""

    #: UUIDs of the nodes under inspection with one of the filtered inspect interfaces;
    #: None: the nodes were not listed (those known stand).
    inspecting: frozenset[str] | None
    #: Port UUID -> (node UUID, MAC), every port Ironic has; None: the ports were not
    #: listed (those known from the last listing and the notifications stand).
    ports: Mapping[str, tuple[str, str]] | None


def _asking(outages: Outages | None, listing: Callable[[], Any]) -> Any:
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
        ports = _asking(
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
        return Snapshot(_asking(outages, _inspecting), None)

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


class _Merged:
    """key -> value from snapshots and from single changes; a change heard after a
    snapshot's poll began wins over that snapshot (as MacList does for its owners)."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        # key -> (when it was heard, its value or None when gone)
        self._heard: dict[str, tuple[float, Any]] = {}

    def put(self, key: str, value: Any, at: float) -> Any:
        """Heard: key has value now (None: gone); returns the value it had."""
        self._heard[key] = (at, value)
        if value is None:
            return self.values.pop(key, None)
        old, self.values[key] = self.values.get(key), value
        return old

    def replace(self, snapshot: Mapping[str, Any], started: float) -> None:
        values = dict(snapshot)
        for key, (at, value) in list(self._heard.items()):
            if at < started:
                del self._heard[key]
            elif value is None:
                values.pop(key, None)
            else:
                values[key] = value
        self.values = values


class IronicInspections:
    """Ironic's nodes under inspection and its ports, kept from reconciles (a Poller's
    target: `name`, `clock`, `replace`) and notifications (called as a channel handler),
    pushed into the firewall's whitelist and blacklist."""

    name = "Ironic inspections"

    def __init__(
        self,
        whitelist: MacList,
        blacklist: MacList,
        *,
        interfaces: Iterable[str] = ("agent",),
        discovery: bool = False,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.whitelist = whitelist
        self.blacklist = blacklist
        self.clock = whitelist.clock
        self.interfaces = frozenset(interfaces)
        self.discovery = discovery
        self.on_change = on_change
        self._guard = threading.Lock()
        self._nodes = _Merged()  # node UUID -> True while under inspection
        self._ports = _Merged()  # port UUID -> (node UUID, MAC)
        #: Whether a listing of every port has replaced the ports (notifications alone
        #: do not tell which MACs Ironic knows).
        self.has_ports = False

    @classmethod
    def from_conf(
        cls, conf: cfg.ConfigOpts, whitelist: MacList, blacklist: MacList, **kwargs: Any
    ) -> "IronicInspections":
        group = conf.pxe_filter
        return cls(
            whitelist,
            blacklist,
            interfaces=group.inspect_interfaces,
            discovery=group.auto_discovery,
            **kwargs,
        )

    def allows_unknown(self) -> bool:
        """ironic-pxe-filter's rule: MACs Ironic does not know boot while discovery is
        on or any node is under inspection (a booting NIC may not be enrolled yet)."""
        return self.discovery or bool(self._nodes.values)

    def inspecting(self) -> frozenset[str]:
        return frozenset(self._nodes.values)

    # -- reconciles -------------------------------------------------------------------------

    def replace(self, snapshot: Snapshot, started: float) -> bool:
        """A listing that began at `started` (this view's clock) found `snapshot`;
        True when the lists or the unknown MACs' fate changed."""
        with self._guard:
            allowed = self.allows_unknown()
            changed = False
            if snapshot.inspecting is not None:
                self._nodes.replace(dict.fromkeys(snapshot.inspecting, True), started)
            if snapshot.ports is not None:
                self._ports.replace(snapshot.ports, started)
                self.has_ports = True
                blacklist = {port: [mac] for port, (_, mac) in self._ports.values.items()}
                changed = self.blacklist.replace(blacklist, started)
            by_node = self._macs_by_node()
            whitelist = {node: by_node.get(node, []) for node in self._nodes.values}
            changed = self.whitelist.replace(whitelist, started) or changed
            return changed or allowed != self.allows_unknown()

    def _macs_by_node(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = collections.defaultdict(list)
        for node, mac in self._ports.values.values():
            result[node].append(mac)
        return result

    def _macs_of(self, node: str) -> list[str]:
        return [mac for owner, mac in self._ports.values.values() if owner == node]

    # -- notifications ----------------------------------------------------------------------

    def __call__(self, event_type: str, payload: dict) -> None:
        """A notification heard on the channel (Ironic's versioned notifications, whose
        payload holds the object under "ironic_object.data"); others are ignored."""
        data = payload.get("ironic_object.data") or {}
        if not isinstance(data, dict) or not data.get("uuid"):
            return
        with self._guard:
            allowed = self.allows_unknown()
            if event_type.startswith(PROVISION_SET):
                changed = self._node_state(data)
            elif event_type in NODE_DELETED:
                changed = self._node_deleted(data["uuid"])
            elif event_type in PORT_CHANGED + PORT_DELETED:
                changed = self._port(data, deleted=event_type in PORT_DELETED)
            else:
                return
            changed = changed or allowed != self.allows_unknown()
        if changed:
            LOG.info(
                "Firewall lists changed by %s of %s (%s)",
                event_type,
                data["uuid"],
                data.get("provision_state") or data.get("address") or "",
            )
            self.on_change()

    def _node_state(self, node: dict) -> bool:
        uuid = node["uuid"]
        inspecting = (
            node.get("provision_state") in INSPECTING
            and node.get("inspect_interface") in self.interfaces
        )
        was = self._nodes.put(uuid, True if inspecting else None, self.clock())
        if inspecting:
            return self.whitelist.set(uuid, self._macs_of(uuid)) or was is None
        return self.whitelist.drop(uuid) or was is not None

    def _node_deleted(self, uuid: str) -> bool:
        now = self.clock()
        changed = self._nodes.put(uuid, None, now) is not None
        changed = self.whitelist.drop(uuid) or changed
        for port, (owner, _) in list(self._ports.values.items()):
            if owner == uuid:
                self._ports.put(port, None, now)
                changed = self.blacklist.drop(port) or changed
        return changed

    def _port(self, port: dict, *, deleted: bool) -> bool:
        uuid, node, mac = port["uuid"], port.get("node_uuid"), port.get("address")
        value = None if deleted or not (node and mac) else (node, mac)
        old = self._ports.put(uuid, value, self.clock())
        changed = self.blacklist.drop(uuid) if value is None else self.blacklist.set(uuid, [mac])
        # The nodes whose MACs this changes: the port's old node and its new one.
        for owner in {old[0] if old else None, node}:
            if owner in self._nodes.values:
                changed = self.whitelist.set(owner, self._macs_of(owner)) or changed
        return changed


def attach(firewall, ironic, conf: cfg.ConfigOpts, channel=None, **watch: Any) -> IronicInspections:
    """Make Ironic's inspections the source of the firewall's lists: the nodes under
    inspection reconciled every [firewall] whitelist_sync_period while leading and at
    each election (before the leader opens); every port listed every
    blacklist_sync_period in every process, on a thread of its own (a new leader opens
    with the ports it kept current as a follower, or lists them first if it never did);
    Ironic's notifications from `channel` (not yet started); unknown MACs as
    ironic-pxe-filter. `watch` goes to firewall.watch."""
    view = IronicInspections.from_conf(
        conf, firewall.whitelist, firewall.blacklist, on_change=firewall.wake
    )
    firewall.allow_unknown = view.allows_unknown
    outages = watch.get("outages")
    ports = PortListing(view, ironic, outages)
    firewall.watch(ports, ports, conf.firewall.blacklist_sync_period, **watch)
    firewall.watch(
        view,
        reconcile(ironic, view.interfaces, outages, ports=ports),
        0,
        leader_period=conf.firewall.whitelist_sync_period,
        **watch,
    )
    if channel is not None:
        channel.subscribe(view)
    return view
