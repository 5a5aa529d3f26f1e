"""The firewall's two MAC lists and what fills them between polls: `Merged`, the one
merge of snapshots with single changes; `MacList` on it; `PollTarget`, what a Poller fills;
`ListSource`, what hears Ironic's notifications and rules on MACs in neither list; and
`Feed`, the channel's one subscriber for our announcements and Ironic's notifications.
Ironic's notification names are defined here once.

Must not poll (firewall.sources) nor apply anything (the manager does).
"""

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Generic, Protocol, TypeVar

from inspector.broker import channels
from inspector.macs import normalise_mac

LOG = logging.getLogger(__name__)

#: Prefix of every Ironic notification ([DEFAULT] notification_level = info, versioned:
#: the payload holds the object under "ironic_object.data"): any one says they flow.
IRONIC_EVENTS = "baremetal."
#: Prefix of a node's provision state change (start, end, success, error): each carries
#: the node as it is then.
PROVISION_SET = "baremetal.node.provision_set."
#: A node deleted: Ironic deletes its ports without a notification of their own.
NODE_DELETED = ("baremetal.node.delete.end",)
#: A port created or changed (it has this address, on this node, now), or deleted.
PORT_CHANGED = ("baremetal.port.create.end", "baremetal.port.update.end")
PORT_DELETED = ("baremetal.port.delete.end",)

Value = TypeVar("Value")
#: What a PollTarget takes: what its Poller fetched.
Taken_contra = TypeVar("Taken_contra", contravariant=True)


class Merged(Generic[Value]):
    """key -> value from snapshots and from single changes: a change heard after a
    snapshot's poll began wins over that snapshot (a poll that started before a port was
    announced must not take the port away again). Not thread-safe: its owner guards it."""

    def __init__(self) -> None:
        self.values: dict[str, Value] = {}
        # key -> (when it was heard, its value or None when gone)
        self._heard: dict[str, tuple[float, Value | None]] = {}

    def put(self, key: str, value: Value | None, at: float) -> Value | None:
        """Heard at `at`: key has value now (None: gone); returns the value it had."""
        self._heard[key] = (at, value)
        if value is None:
            return self.values.pop(key, None)
        old, self.values[key] = self.values.get(key), value
        return old

    def replace(self, snapshot: Mapping[str, Value], started: float) -> None:
        """A poll that began at `started` found `snapshot`."""
        values = dict(snapshot)
        for key, (at, value) in list(self._heard.items()):
            if at < started:
                del self._heard[key]  # the snapshot is newer
            elif value is None:
                values.pop(key, None)
            else:
                values[key] = value
        self.values = values


def _normal(macs: Iterable[str], owner: str) -> frozenset[str]:
    result = set()
    for mac in macs:
        try:
            result.add(normalise_mac(mac))
        except ValueError as exc:
            LOG.warning("Ignoring a MAC of %s: %s", owner, exc)
    return frozenset(result)


class MacList:
    """MACs by owner (a node UUID for the whitelist, a port UUID for the blacklist),
    merged from snapshots (`replace`, a Poller's target) and the channel (`set`, `drop`);
    an owner without MACs is no owner."""

    def __init__(self, name: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.clock = clock
        self._guard = threading.Lock()
        self._owners: Merged[frozenset[str]] = Merged()
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
            self._owners.put(owner, macs or None, self.clock())
            self.heard_at = time.time()
            return self._update()

    def replace(self, snapshot: Mapping[str, Iterable[str]], started: float) -> bool:
        """A poll that began at `started` (this list's clock) found `snapshot`."""
        owners = {owner: _normal(macs, owner) for owner, macs in snapshot.items()}
        with self._guard:
            self._owners.replace({owner: macs for owner, macs in owners.items() if macs}, started)
            self.synced_at = time.time()
            return self._update()

    def _update(self) -> bool:
        macs = frozenset().union(*self._owners.values.values())
        changed, self._macs = macs != self._macs, macs
        if changed:
            LOG.debug("%s: %d MACs", self.name, len(macs))
        return changed


class PollTarget(Protocol[Taken_contra]):
    """Where a Poller puts what it fetched: a MacList, or a view of Ironic's (the nodes
    under inspection, every port)."""

    name: str

    def clock(self) -> float: ...

    def replace(self, snapshot: Taken_contra, started: float) -> bool:
        """Take `snapshot`, fetched from `started` on; whether the lists changed."""
        ...


class ListSource(Protocol):
    """What the lists come from, beside the polls and our announcements: Ironic's
    notifications, and whether MACs in neither list are answered (unless deny_unknown)."""

    def hear(self, event_type: str, payload: dict) -> bool:
        """An Ironic notification (IRONIC_EVENTS); True when the lists or the unknown
        MACs' fate changed."""
        ...

    def allows_unknown(self) -> bool: ...


class PortEvents:
    """The ListSource of Inspector's own introspections: Ironic's port notifications
    into the blacklist; MACs in neither list are answered."""

    def __init__(self, blacklist: MacList) -> None:
        self.blacklist = blacklist

    def hear(self, event_type: str, payload: dict) -> bool:
        if event_type not in PORT_CHANGED + PORT_DELETED:
            return False
        port = payload.get("ironic_object.data") or {}
        if event_type in PORT_CHANGED:
            changed = self.blacklist.set(port["uuid"], [port["address"]])
        else:
            changed = self.blacklist.drop(port["uuid"])
        if changed:
            LOG.info("Firewall lists changed by %s", event_type)
        return changed

    def allows_unknown(self) -> bool:
        return True


class Fed(Protocol):
    """What a Feed feeds: the firewall manager's lists, its source, its wake-up call and
    its answer to a status request."""

    whitelist: MacList
    blacklist: MacList
    source: ListSource

    def wake(self) -> None: ...

    def answer(self, request_id: str) -> None: ...


class Feed:
    """The firewall channel's one handler of our announcements (into the lists), Ironic's
    notifications (to the ListSource) and status requests (to the manager's answer); the
    leader's listing of Ironic's ports has its own (ironic_listing.PortListing.hear)."""

    def __init__(self, fed: Fed) -> None:
        self.fed = fed

    def __call__(self, event_type: str, payload: dict) -> None:
        fed, changed = self.fed, False
        if event_type == channels.INTROSPECTION_STARTED:
            changed = fed.whitelist.set(payload["node_uuid"], payload.get("macs") or [])
        elif event_type == channels.INTROSPECTION_ENDED:
            changed = fed.whitelist.drop(payload["node_uuid"])
        elif event_type == channels.PORT_ADDED:
            changed = fed.blacklist.set(payload["uuid"], [payload["address"]])
        elif event_type == channels.PORT_REMOVED:
            changed = fed.blacklist.drop(payload["uuid"])
        elif event_type.startswith(IRONIC_EVENTS):
            if fed.source.hear(event_type, payload):  # which logs what changed
                fed.wake()
        elif event_type == channels.STATUS_REQUEST:
            fed.answer(str(payload.get("request_id", "")))
        if changed:
            LOG.info("Firewall lists changed by %s", event_type)
            fed.wake()
