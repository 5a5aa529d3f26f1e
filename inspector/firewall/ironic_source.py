"""The firewall's lists when Ironic inspects by itself ([pxe_filter] whitelist_source =
ironic, Ironic 2026.1 and later): Ironic's nodes under inspection and its ports, from
listings through Ironic's REST API (the nodes' reconcile, the ports' listing) and from
Ironic's notifications; and whether MACs Ironic does not know are answered, as
ironic-pxe-filter decides it.

Owns that view of Ironic (a ListSource) and its merging into the two MacLists
(whitelist: node UUID -> the MACs of its ports while it is under inspection; blacklist:
port UUID -> its MAC, every port); must not apply anything (the manager does).
"""

import collections
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from oslo_config import cfg

from inspector.broker import channels
from inspector.firewall.cadence import Cadence
from inspector.firewall.ironic_listing import (
    INSPECTING,
    PortListing,
    Snapshot,
    reconcile,
)
from inspector.firewall.lists import (
    IRONIC_EVENTS,
    NODE_DELETED,
    PORT_CHANGED,
    PORT_DELETED,
    PROVISION_SET,
    MacList,
    Merged,
)
from inspector.firewall.observer import Observer, moment
from inspector.ironic import IronicClient

if TYPE_CHECKING:
    from inspector.firewall.manager import FirewallManager

LOG = logging.getLogger(__name__)


class IronicInspections:
    """Ironic's nodes under inspection and its ports, kept from reconciles (a
    PollTarget) and notifications (the firewall's ListSource: `hear`), pushed into the
    firewall's whitelist and blacklist; it rules on unknown MACs (`allows_unknown`)."""

    name = "Ironic inspections"

    def __init__(
        self,
        whitelist: MacList,
        blacklist: MacList,
        *,
        interfaces: Iterable[str] = ("agent",),
        discovery: bool = False,
        on_change: Callable[[], None] = lambda: None,
        cadence: Cadence | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.whitelist = whitelist
        self.blacklist = blacklist
        self.clock = whitelist.clock
        self.interfaces = frozenset(interfaces)
        self.discovery = discovery
        self.on_change = on_change
        #: Told of every Ironic notification heard (the leader polls slowly then).
        self.cadence = cadence or Cadence(0, 0, 1, listening=False)
        self.observer = observer or Observer()
        self._guard = threading.Lock()
        self._nodes: Merged[bool] = Merged()  # node UUID -> True while under inspection
        self._ports: Merged[tuple[str, str]] = Merged()  # port UUID -> (node UUID, MAC)
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
                for node in snapshot.inspecting - self._nodes.values.keys():
                    self.observer.changed(snapshot.since.get(node))
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

    def update_ports(self, ports: Mapping[str, tuple[str, str]]) -> bool:
        """Ports a listing of changes found created or changed (port UUID -> (node UUID,
        MAC)); the others stand. True when the lists or the unknown MACs' fate changed."""
        with self._guard:
            allowed = self.allows_unknown()
            changed = False
            for uuid, (node, mac) in ports.items():
                port = {"uuid": uuid, "node_uuid": node, "address": mac}
                changed = self._port(port, deleted=False) or changed
            return changed or allowed != self.allows_unknown()

    def ports(self) -> dict[str, tuple[str, str]]:
        """Port UUID -> (node UUID, MAC), as the view holds them now."""
        with self._guard:
            return dict(self._ports.values)

    def _macs_by_node(self) -> dict[str, list[str]]:
        result: dict[str, list[str]] = collections.defaultdict(list)
        for node, mac in self._ports.values.values():
            result[node].append(mac)
        return result

    def _macs_of(self, node: str) -> list[str]:
        return [mac for owner, mac in self._ports.values.values() if owner == node]

    # -- notifications ----------------------------------------------------------------------

    def hear(self, event_type: str, payload: dict) -> bool:
        """An Ironic notification heard on the channel (versioned: the payload holds the
        object under "ironic_object.data"); True when the lists or the unknown MACs' fate
        changed (the caller wakes the firewall)."""
        if event_type.startswith(IRONIC_EVENTS):
            self.cadence.heard()
            self.observer.notification()
        data = payload.get("ironic_object.data") or {}
        if not isinstance(data, dict) or not data.get("uuid"):
            return False
        with self._guard:
            allowed = self.allows_unknown()
            if event_type.startswith(PROVISION_SET):
                changed = self._node_state(data)
                if changed:
                    self.observer.changed(moment(data.get("provision_updated_at")))
            elif event_type in NODE_DELETED:
                changed = self._node_deleted(data["uuid"])
            elif event_type in PORT_CHANGED + PORT_DELETED:
                changed = self._port(data, deleted=event_type in PORT_DELETED)
            else:
                return False
            changed = changed or allowed != self.allows_unknown()
        if changed:
            LOG.info(
                "Firewall lists changed by %s of %s (%s)",
                event_type,
                data["uuid"],
                data.get("provision_state") or data.get("address") or "",
            )
        return changed

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
        changed = (
            self.blacklist.drop(uuid) if value is None else self.blacklist.set(uuid, [value[1]])
        )
        # The nodes whose MACs this changes: the port's old node and its new one.
        for owner in {old[0] if old else None, node}:
            if owner in self._nodes.values:
                changed = self.whitelist.set(owner, self._macs_of(owner)) or changed
        return changed


def attach(
    firewall: "FirewallManager",
    ironic: IronicClient,
    conf: cfg.ConfigOpts,
    channel: channels.Channel | None = None,
    **watch: Any,
) -> IronicInspections:
    """Make Ironic's inspections the source of the firewall's lists: the nodes under
    inspection reconciled while leading (and at each election, before the leader opens)
    at the Cadence's period: [firewall] inspection_poll_interval while no Ironic
    notification was heard lately, whitelist_sync_period while they flow; the ports
    listed every blacklist_sync_period by the leader, on a thread of its own (every port
    every full_port_listing_period, those changed since in between unless notifications
    flow), and shared on `channel` with the followers, which list by themselves only
    when it stops reaching them (a new leader opens with ports no older than one period
    and a full listing no older than full_port_listing_period, or lists first);
    Ironic's notifications through the firewall's Feed (firewall.listen);
    unknown MACs as ironic-pxe-filter. `watch` goes to firewall.watch."""
    cadence = Cadence.from_conf(
        conf, listening=channel is not None and bool(conf.firewall.ironic_topic)
    )
    observer = firewall.observer
    view = IronicInspections.from_conf(
        conf,
        firewall.whitelist,
        firewall.blacklist,
        on_change=firewall.wake,
        cadence=cadence,
        observer=observer,
    )
    firewall.fill_from(view)
    outages = watch.get("outages")
    ports = PortListing(
        view,
        ironic,
        outages,
        period=conf.firewall.blacklist_sync_period,
        full_period=conf.firewall.full_port_listing_period,
        leading=firewall.is_leader,
        notified=cadence.is_notified,
        share=None if channel is None else channel.publish,
        observer=observer,
    )
    firewall.watch(ports, ports, conf.firewall.blacklist_sync_period, **watch)
    firewall.watch(
        view,
        reconcile(
            ironic, view.interfaces, outages, ports=ports, observer=observer, spent=cadence.spent
        ),
        0,
        leader_period=cadence,
        **watch,
    )
    if channel is not None:
        channel.subscribe(ports.hear)
    return view
