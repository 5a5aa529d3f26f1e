"""FakeIronic: the `inspector.ironic.Ironic` interface on in-memory nodes and ports.

Records every call with its arguments and the headers the real client would add for the
request it is made for (`history`; inspector.request_context's global request id),
counts them (`calls`), and can be told to fail the next N calls with ServiceUnavailable
(`fail_next`), or what to do with the next power actions of a node (`plan_power`: done,
lost as by a conductor restart, left pending, failed, refused). No HTTP, no retries, no
waits. tests/contract/test_ironic_client.py holds it to a real Ironic's answers.
"""

import contextlib
import copy
import dataclasses
import re
import threading
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from inspector import request_context
from inspector.errors import BadRequest, Conflict, InspectorError, NotFound, ServiceUnavailable
from inspector.ironic import IronicNode, IronicPort
from inspector.macs import normalise_mac

#: Power state a node reaches on each target (fake hardware gets there at once).
POWER_TARGETS = {"power on": "power on", "power off": "power off", "rebooting": "power on"}

#: What `plan_power` can make of a power action Ironic accepted (202) or refuses.
DONE = "done"  # reached at once (the default)
LOST = "lost"  # dropped as by a conductor restart: target cleared, last_error says so
PENDING = "pending"  # accepted, never finished: target_power_state stays set
FAILED = "failed"  # the conductor failed it: target cleared, last_error set
REFUSED = "refused"  # refused at once with a 400 (BadRequest)
#: The last_error Ironic writes when its restarted conductor drops a pending action.
ABORTED = "Pending power operation was aborted due to conductor restart"
#: The boot devices a driver supports, as Ironic checks them (other drivers: any).
BOOT_DEVICES = {"fake-hardware": {"pxe"}}
#: A node name Ironic accepts: URL-unreserved characters only.
NODE_NAME = re.compile(r"[A-Za-z0-9._~-]{1,255}")
#: A trait Ironic accepts: a custom one, or (unlike Ironic, which checks os-traits' list)
#: any name spelled like a standard one.
TRAIT = re.compile(r"(CUSTOM_)?[A-Z0-9_]{1,248}")


@dataclasses.dataclass(frozen=True)
class Call:
    name: str
    args: tuple
    kwargs: dict
    #: What the real connection would send besides its own headers (X-OpenStack-Request-ID).
    headers: dict = dataclasses.field(default_factory=dict)


class FakeIronic:
    """Same methods and results as Ironic; state in `nodes`, `ports` and `boot_devices`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.nodes: dict[str, IronicNode] = {}
        self.ports: dict[str, IronicPort] = {}
        #: node uuid -> (device, persistent) of the last set_boot_device.
        self.boot_devices: dict[str, tuple[str, bool]] = {}
        self.traits: dict[str, set[str]] = {}
        self.history: list[Call] = []
        self._failures: list[InspectorError] = []
        #: node uuid -> what its next power actions do (see `plan_power`).
        self._power_plans: dict[str, list[str]] = {}
        #: node uuid -> (inspection_finished_at, {"inventory", "plugin_data"}) of its
        #: last built-in inspection (see `inspected`).
        self.inspections: dict[str, tuple[datetime, dict]] = {}
        #: port uuid -> (created_at, updated_at or None), Ironic's clock (`now`).
        self.port_stamps: dict[str, tuple[datetime, datetime | None]] = {}
        self.now: Callable[[], datetime] = self._tick
        self._last_stamp = datetime.min

    # ------------------------------------------------------------ test helpers

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.history)

    def calls_to(self, name: str) -> list[Call]:
        with self._lock:
            return [call for call in self.history if call.name == name]

    def fail_next(self, count: int = 1, error: InspectorError | None = None) -> None:
        """The next `count` calls raise `error` (ServiceUnavailable naming Ironic by default)."""
        with self._lock:
            for _ in range(count):
                self._failures.append(error or ServiceUnavailable("Ironic is unavailable (fake)"))

    def plan_power(self, node_uuid: str, *outcomes: str, reason: str = "fake power failed") -> None:
        """The node's next power actions do `outcomes` in turn (DONE, LOST, PENDING,
        FAILED, REFUSED); later ones are DONE. `reason`: FAILED's last_error, REFUSED's
        message."""
        with self._lock:
            self._power_plans.setdefault(node_uuid, []).extend(
                f"{outcome}:{reason}" for outcome in outcomes
            )

    def add_node(self, *, uuid: str | None = None, **fields: Any) -> IronicNode:
        """A node, without recording a call; defaults to a manageable fake-hardware node."""
        values = {
            "uuid": uuid or str(uuidlib.uuid4()),
            "name": None,
            "provision_state": "manageable",
            "power_state": "power off",
            "driver": "fake-hardware",
            "driver_info": {},
            "properties": {},
            "extra": {},
            "maintenance": False,
            "inspect_interface": "agent",
            **fields,
        }
        node = IronicNode(**values)
        with self._lock:
            self.nodes[node.uuid] = node
        return node

    def inspected(self, node_uuid: str, finished_at: datetime, data: dict) -> None:
        """Ironic's own inspection of the node finished at `finished_at`, storing the
        ramdisk's `data` as Ironic does (inventory apart, the rest as plugin data)."""
        plugin_data = {key: value for key, value in data.items() if key != "inventory"}
        with self._lock:
            self.inspections[node_uuid] = (
                finished_at,
                {"inventory": data["inventory"], "plugin_data": plugin_data},
            )

    def add_port(self, node_uuid: str, address: str, **fields: Any) -> IronicPort:
        """A port, without recording a call."""
        with self._lock:
            return self._new_port(node_uuid, address, **fields)

    # ------------------------------------------------------------ the interface

    def get_node(self, ident: str) -> IronicNode:
        with self._begin("get_node", ident):
            try:
                return self._node(ident)
            except NotFound:  # as the real client words Ironic's 404 of a node read
                raise NotFound(f"Node {ident} was not found in Ironic") from None

    def iter_nodes(
        self,
        *,
        page_size: int = 1000,
        fields: Sequence[str] | None = None,
        provision_state: str | None = None,
    ) -> Iterator[IronicNode]:
        with self._begin(
            "iter_nodes", page_size=page_size, fields=fields, provision_state=provision_state
        ):
            nodes = sorted(
                (
                    node
                    for node in self.nodes.values()
                    if provision_state in (None, node.provision_state)
                ),
                key=lambda n: n.uuid,
            )
        if fields is not None:  # as Ironic sends them: the others come back empty
            nodes = [IronicNode.from_ironic(_only(node, "uuid", *fields)) for node in nodes]
        return iter(nodes)

    def inspected_since(
        self, since: datetime | None, *, page_size: int = 1000
    ) -> list[tuple[str, datetime]]:
        with self._begin("inspected_since", since, page_size=page_size):
            found = sorted(
                ((uuid, finished) for uuid, (finished, _) in self.inspections.items()),
                key=lambda item: item[1],
                reverse=True,
            )
        return [item for item in found if since is None or item[1] >= since]

    def get_inventory(self, node_uuid: str) -> dict[str, Any] | None:
        with self._begin("get_inventory", node_uuid):
            found = self.inspections.get(node_uuid)
            return None if found is None else copy.deepcopy(found[1])

    def create_node(self, *, driver: str, **fields: Any) -> IronicNode:
        with self._begin("create_node", driver=driver, **fields):
            name = fields.get("name")
            if name is not None and not NODE_NAME.fullmatch(name):
                raise BadRequest(f"Cannot create node with invalid name '{name}'")
            if name and any(n.name == name for n in self.nodes.values()):
                raise Conflict(f"Ironic refused to create a node: name {name} is taken")
            node_uuid = fields.pop("uuid", None) or str(uuidlib.uuid4())
            if node_uuid in self.nodes:
                raise Conflict(f"Ironic refused to create a node: {node_uuid} exists")
            fields.setdefault("provision_state", "enroll")
            fields.setdefault("power_state", None)
            node = IronicNode(**{**_node_defaults(), **fields, "driver": driver, "uuid": node_uuid})
            self.nodes[node.uuid] = node
            return node

    def patch_node(
        self, node_uuid: str, patch: list[dict], *, reset_interfaces: bool = False
    ) -> IronicNode:
        with self._begin("patch_node", node_uuid, patch, reset_interfaces=reset_interfaces):
            node = self._node(node_uuid)
            values = apply_patch(dataclasses.asdict(node), patch)
            node = IronicNode(**values)
            self.nodes[node.uuid] = node
            return node

    def port_owner(self, address: str) -> str | None:
        with self._begin("port_owner", address):
            address = _mac(address)
            for port in self.ports.values():
                if port.address == address:
                    return port.node_uuid
            return None

    def add_trait(self, node_uuid: str, trait: str) -> None:
        with self._begin("add_trait", node_uuid, trait):
            self._node(node_uuid)
            if not TRAIT.fullmatch(trait):
                raise BadRequest(f"Ironic refused to add trait {trait}: not a valid trait")
            self.traits.setdefault(node_uuid, set()).add(trait)

    def remove_trait(self, node_uuid: str, trait: str) -> None:
        with self._begin("remove_trait", node_uuid, trait):
            self._node(node_uuid)
            self.traits.setdefault(node_uuid, set()).discard(trait)

    def set_boot_device(
        self, node_uuid: str, device: str = "pxe", persistent: bool = False
    ) -> None:
        with self._begin("set_boot_device", node_uuid, device, persistent=persistent):
            supported = BOOT_DEVICES.get(self._node(node_uuid).driver)
            if supported is not None and device not in supported:
                raise BadRequest(
                    f"Ironic refused to set the boot device: Invalid boot device {device}"
                )
            self.boot_devices[node_uuid] = (device, persistent)

    def set_power_state(self, node_uuid: str, target: str) -> None:
        with self._begin("set_power_state", node_uuid, target):
            node = self._node(node_uuid)
            if target not in POWER_TARGETS:
                raise BadRequest(f"Ironic refused to set the power: unknown target {target}")
            plan = self._power_plans.get(node_uuid) or [f"{DONE}:"]
            outcome, _, reason = plan.pop(0).partition(":")
            wanted = POWER_TARGETS[target]
            if outcome == REFUSED:
                raise BadRequest(f"Ironic refused to set the power of node {node_uuid}: {reason}")
            changes: dict[str, Any] = {"target_power_state": None, "last_error": None}
            if outcome == DONE:
                changes["power_state"] = wanted
            elif outcome == LOST:
                changes["last_error"] = ABORTED
            elif outcome == PENDING:
                changes["target_power_state"] = wanted
            else:
                changes["last_error"] = f"Failed to change power state to '{wanted}': {reason}"
            self.nodes[node_uuid] = dataclasses.replace(node, **changes)

    def list_ports(self, node_uuid: str) -> list[IronicPort]:
        with self._begin("list_ports", node_uuid):
            self._node(node_uuid)
            return sorted(
                (p for p in self.ports.values() if p.node_uuid == node_uuid),
                key=lambda p: p.uuid,
            )

    def iter_ports(
        self, *, page_size: int = 1000, fields: Sequence[str] | None = None
    ) -> Iterator[IronicPort]:
        with self._begin("iter_ports", page_size=page_size, fields=fields):
            ports = sorted(self.ports.values(), key=lambda p: p.uuid)
        if fields is not None:  # as Ironic sends them: the others come back empty
            kept = ("uuid", "node_uuid", "address", *fields)
            ports = [IronicPort.from_ironic(_only(port, *kept)) for port in ports]
        return iter(ports)

    def changed_ports(
        self, since: datetime, *, page_size: int = 50
    ) -> list[tuple[IronicPort, datetime]] | None:
        """As Ironic on SQLite or MySQL (never-updated ports sort last)."""
        with self._begin("changed_ports", since, page_size=page_size):
            found = []
            for index in (0, 1):  # created_at, then updated_at
                stamped = [
                    (self.ports[uuid], stamps[index])
                    for uuid, stamps in self.port_stamps.items()
                    if uuid in self.ports  # a test may drop one from `ports`
                    and (stamp := stamps[index]) is not None
                    and stamp >= since
                ]
                found += sorted(stamped, key=lambda item: item[1], reverse=True)
            return found

    def last_port_change(self) -> datetime | None:
        with self._begin("last_port_change"):
            stamps = [s for pair in self.port_stamps.values() for s in pair if s is not None]
            return max(stamps, default=None)

    def create_port(
        self,
        node_uuid: str,
        address: str,
        *,
        pxe_enabled: bool = True,
        extra: dict | None = None,
        local_link_connection: dict | None = None,
        physical_network: str | None = None,
    ) -> IronicPort:
        with self._begin("create_port", node_uuid, address, pxe_enabled=pxe_enabled, extra=extra):
            if node_uuid not in self.nodes:  # Ironic's 400, not 404: the body names it
                raise BadRequest(
                    f"Ironic refused to create a port: Node {node_uuid} could not be found."
                )
            return self._new_port(
                node_uuid,
                address,
                pxe_enabled=pxe_enabled,
                extra=extra or {},
                local_link_connection=local_link_connection or {},
                physical_network=physical_network,
            )

    def update_port(self, port_uuid: str, patch: list[dict]) -> IronicPort:
        with self._begin("update_port", port_uuid, patch):
            port = self._port(port_uuid)
            port = IronicPort(**apply_patch(dataclasses.asdict(port), patch))
            self.ports[port.uuid] = port
            self.port_stamps[port.uuid] = (self.port_stamps[port.uuid][0], self.now())
            return port

    def delete_port(self, port_uuid: str) -> None:
        with self._begin("delete_port", port_uuid):
            self._port(port_uuid)
            del self.ports[port_uuid]
            del self.port_stamps[port_uuid]

    # ------------------------------------------------------------ internals

    def _tick(self) -> datetime:
        """Now, naive UTC, later than the last stamp (two changes never share one)."""
        now = datetime.now(UTC).replace(tzinfo=None)
        self._last_stamp = max(now, self._last_stamp + timedelta(microseconds=1))
        return self._last_stamp

    @contextlib.contextmanager
    def _begin(self, name: str, /, *args: Any, **kwargs: Any) -> Iterator[None]:
        """Record the call, then fail it if told to; the state is locked while it runs."""
        with self._lock:
            headers = request_context.outgoing_headers()
            self.history.append(Call(name, copy.deepcopy(args), copy.deepcopy(kwargs), headers))
            if self._failures:
                raise self._failures.pop(0)
            yield

    def _node(self, ident: str) -> IronicNode:
        node = self.nodes.get(ident)
        if node is None:
            node = next((n for n in self.nodes.values() if n.name == ident), None)
        if node is None:
            raise NotFound(f"Ironic: Node {ident} could not be found.")
        return node

    def _port(self, port_uuid: str) -> IronicPort:
        try:
            return self.ports[port_uuid]
        except KeyError:
            raise NotFound(f"Ironic: Port {port_uuid} could not be found.") from None

    def _new_port(self, node_uuid: str, address: str, **fields: Any) -> IronicPort:
        address = _mac(address)
        if any(p.address == address for p in self.ports.values()):
            raise Conflict(f"Ironic refused to create port: MAC {address} already exists.")
        values = {
            "pxe_enabled": True,
            "extra": {},
            "local_link_connection": {},
            "physical_network": None,
            **fields,
        }
        port = IronicPort(uuid=str(uuidlib.uuid4()), node_uuid=node_uuid, address=address, **values)
        self.ports[port.uuid] = port
        self.port_stamps[port.uuid] = (self.now(), None)
        return port


def _mac(address: str) -> str:
    """The MAC as Ironic stores it; BadRequest for what is not one, as Ironic answers."""
    try:
        return normalise_mac(address)
    except ValueError:
        raise BadRequest(f"Ironic: Expected a MAC address but received {address}.") from None


def _only(item: IronicNode | IronicPort, *fields: str) -> dict[str, Any]:
    """The fields of `item` a listing that asked for `fields` receives."""
    return {key: value for key, value in dataclasses.asdict(item).items() if key in fields}


def _node_defaults() -> dict[str, Any]:
    return {
        "name": None,
        "provision_state": "enroll",
        "power_state": None,
        "driver_info": {},
        "properties": {},
        "extra": {},
        "maintenance": False,
        "inspect_interface": None,
        "target_power_state": None,
        "last_error": None,
    }


def apply_patch(document: dict, patch: list[dict]) -> dict:
    """RFC 6902 add/replace/remove on a copy of document (what Ironic's PATCH accepts)."""
    result = copy.deepcopy(document)
    for operation in patch:
        op, path = operation.get("op"), operation.get("path", "")
        keys = [k.replace("~1", "/").replace("~0", "~") for k in path.lstrip("/").split("/")]
        if not keys or not keys[0] or keys[0] in ("uuid", "node_uuid"):
            raise BadRequest(f"Ironic refused the patch: cannot patch {path}")
        parent = result
        for key in keys[:-1]:
            if not isinstance(parent.get(key), dict):
                raise BadRequest(f"Ironic refused the patch: {path} does not exist")
            parent = parent[key]
        last = keys[-1]
        if len(keys) == 1 and last not in result:
            raise BadRequest(f"Ironic refused the patch: cannot patch {path}")
        if op in ("add", "replace"):
            if op == "replace" and last not in parent:
                raise BadRequest(f"Ironic refused the patch: {path} does not exist")
            parent[last] = copy.deepcopy(operation["value"])
        elif op == "remove":
            if last not in parent:
                raise BadRequest(f"Ironic refused the patch: {path} does not exist")
            if len(keys) == 1:
                parent[last] = {} if isinstance(parent[last], dict) else None
            else:
                del parent[last]
        else:
            raise BadRequest(f"Ironic refused the patch: unsupported op {op}")
    return result
