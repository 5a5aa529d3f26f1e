"""The default hooks of ironic-inspector: ramdisk_error, root_disk_selection, scheduler and
validate_interfaces (which also decides the ports to add, delete and fix).

Needs nothing but the data and the node as Ironic had it; records changes only.
"""

import ipaddress
import logging
from typing import Any

from oslo_config import cfg

from inspector.errors import ConfigError
from inspector.macs import parse_mac
from inspector.processing.context import ProcessingContext, ProcessingError
from inspector.processing.hooks import ports as port_view
from inspector.processing.hooks import root_device
from inspector.processing.hooks.base import ProcessingHook, inventory

LOG = logging.getLogger(__name__)

MiB = 1024**2
#: Provision states of deployed nodes: their ports are neither deleted nor changed.
ACTIVE_STATES = frozenset({"active", "rescue"})
_NO_BMC = {"", "0.0.0.0", "::", "::/0"}  # noqa: S104 - placeholders IPA sends, not a bind


class RamdiskErrorHook(ProcessingHook):
    """Fail the processing when the ramdisk reported an error."""

    def before_processing(self, data: dict[str, Any], conf: cfg.ConfigOpts) -> None:
        error = data.get("error")
        if error:
            raise ProcessingError(f"Ramdisk reported error: {error}")


class RootDiskSelectionHook(ProcessingHook):
    """The root disk from the node's root device hints, and local_gb from its size."""

    def before_update(self, context: ProcessingContext) -> None:
        data, node = context.data, context.node
        disks = _without_skipped(node.properties, inventory(data)["disks"])
        hints = node.properties.get("root_device")
        if hints:
            data["root_disk"] = _match_hints(disks, hints)
        elif not data.get("root_disk"):
            guessed = root_device.guess(disks)
            if guessed is not None:
                data["root_disk"] = guessed
        local_gb = _local_gb(data.get("root_disk"), context)
        data["local_gb"] = local_gb
        context.set_property("local_gb", str(local_gb))


def _without_skipped(properties: dict[str, Any], disks: list[dict]) -> list[dict]:
    """The disks minus those matching any hint of node.properties["skip_block_devices"]."""
    skipped: set[str | None] = set()
    for hint in properties.get("skip_block_devices") or []:
        try:
            skipped.update(disk.get("name") for disk in root_device.find(disks, hint))
        except Exception as exc:  # bad hint syntax: the node's data, not ours
            raise ProcessingError(f"Invalid skip_block_devices hint {hint}: {exc}") from exc
    return [disk for disk in disks if disk.get("name") not in skipped]


def _match_hints(disks: list[dict], hints: Any) -> dict[str, Any]:
    try:
        if not isinstance(hints, dict):
            raise ValueError("root_device must be a JSON object")
        disk = root_device.match(disks, hints)
    except Exception as exc:  # ValueError or the hint parser's own errors
        raise ProcessingError(
            f"No disks could be found using the root device hints {hints} because they "
            f"failed to validate. Error: {exc}"
        ) from exc
    if disk is None:
        raise ProcessingError(f"No disks satisfied root device hints {hints}")
    return disk


def _local_gb(root_disk: Any, context: ProcessingContext) -> int:
    if not root_disk:
        LOG.info("[node %s] no root device found, assuming a diskless node", context.node.uuid)
        return 0
    size = root_disk.get("size") if isinstance(root_disk, dict) else None
    local_gb = size // root_device.GiB if isinstance(size, int) else 0
    if not local_gb:
        LOG.warning(
            "[node %s] the root disk %s is smaller than 1 GiB or has no size",
            context.node.uuid,
            root_disk.get("name") if isinstance(root_disk, dict) else "(not an object)",
        )
        return 0
    if context.conf.processing.disk_partitioning_spacing:
        local_gb -= 1
    return local_gb


class SchedulerHook(ProcessingHook):
    """cpus, cpu_arch and memory_mb for the Nova scheduler, from the inventory."""

    #: Where each value comes from, as a failure names it.
    SOURCES = {
        "cpus": "inventory.cpu.count",
        "cpu_arch": "inventory.cpu.architecture",
        "memory_mb": "inventory.memory.physical_mb or total",
    }

    def before_update(self, context: ProcessingContext) -> None:
        found = inventory(context.data)
        cpu = given if isinstance(given := found.get("cpu"), dict) else {}
        memory = given if isinstance(given := found.get("memory"), dict) else {}
        cpus, bad_cpus = _positive(cpu, "count", "inventory.cpu.count")
        memory_mb, bad_memory = _memory_mb(memory)
        values = {
            "cpus": cpus,
            "cpu_arch": str(cpu["architecture"]) if cpu.get("architecture") else None,
            "memory_mb": memory_mb,
        }
        invalid = {key: why for key, why in (("cpus", bad_cpus), ("memory_mb", bad_memory)) if why}
        absent = [
            f"{key} ({self.SOURCES[key]})"
            for key, value in values.items()
            if not value and key not in invalid
        ]
        said = [f"missing: {', '.join(absent)}"] if absent else []
        if invalid:
            said.append(f"invalid: {', '.join(f'{key} ({why})' for key, why in invalid.items())}")
        if said:
            raise ProcessingError(f"The following required parameters are {'; '.join(said)}")
        for key, value in values.items():
            context.data[key] = value
            context.set_property(key, str(value))


def _positive_int(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _positive(section: dict[str, Any], key: str, where: str) -> tuple[int | None, str | None]:
    """section[key] as a positive integer (or None), and why not when it is there but is
    not one: its value when a number, else its type (the data is not quoted)."""
    value = section.get(key)
    number = _positive_int(value)
    if value is None or number is not None:
        return number, None
    number_like = isinstance(value, int | float) and not isinstance(value, bool)
    shown = value if number_like else f"a {type(value).__name__}"
    return None, f"{where} is {shown}, not a positive integer"


def _memory_mb(memory: dict[str, Any]) -> tuple[int | None, str | None]:
    physical, bad_physical = _positive(memory, "physical_mb", "inventory.memory.physical_mb")
    if physical:
        return physical, None
    total, bad_total = _positive(memory, "total", "inventory.memory.total")
    if total and total >= MiB:
        return total // MiB, None
    if total:
        bad_total = f"inventory.memory.total is {total}, less than 1 MiB"
    return None, ", ".join(why for why in (bad_physical, bad_total) if why) or None


class ValidateInterfacesHook(ProcessingHook):
    """The node's interfaces (all_interfaces, interfaces, macs) and its port changes."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        if conf.processing.add_ports == "disabled" and conf.processing.keep_ports == "added":
            raise ConfigError(
                "[processing] add_ports = disabled with keep_ports = added would delete "
                "every port; set keep_ports to all or present"
            )

    def before_processing(self, data: dict[str, Any], conf: cfg.ConfigOpts) -> None:
        found = inventory(data)
        data["ipmi_address"] = _bmc(found.get("bmc_address"), data.get("ipmi_address"))
        data["ipmi_v6address"] = _bmc(found.get("bmc_v6address"), data.get("ipmi_v6address"))
        pxe_mac = pxe_mac_of(data)
        all_interfaces = _interfaces(found["interfaces"], pxe_mac)
        interfaces = _eligible(all_interfaces, pxe_mac, conf.processing.add_ports)
        data["all_interfaces"] = all_interfaces
        data["interfaces"] = interfaces
        data["macs"] = [iface["mac"] for iface in interfaces.values()]

    def before_update(self, context: ProcessingContext) -> None:
        options = context.conf.processing
        pxe_known = pxe_mac_of(context.data) is not None
        if options.add_ports != "disabled":
            _add_ports(context, pxe_known and options.update_pxe_enabled)
        if context.node.provision_state in ACTIVE_STATES:
            LOG.debug(
                "[node %s] %s: not deleting or changing its ports",
                context.node.uuid,
                context.node.provision_state,
            )
            return
        _delete_ports(context, options.keep_ports)
        if options.overwrite_existing and options.update_pxe_enabled and pxe_known:
            _fix_pxe_enabled(context)


def pxe_mac_of(data: dict[str, Any]) -> str | None:
    """The PXE MAC: boot_interface (also '01-aa-bb-..'), else inventory.boot.pxe_interface."""
    boot = (data.get("inventory") or {}).get("boot") or {}
    return parse_mac(data.get("boot_interface")) or parse_mac(boot.get("pxe_interface"))


def _bmc(address: Any, legacy: Any) -> str | None:
    value = address if address is not None else legacy
    return value if isinstance(value, str) and value.strip() not in _NO_BMC else None


def _interfaces(records: list[Any], pxe_mac: str | None) -> dict[str, dict[str, Any]]:
    result = {}
    for index, record in enumerate(records):
        name = record.get("name") if isinstance(record, dict) else None
        if not name:
            LOG.error("Malformed interface record (inventory.interfaces[%d]): no name", index)
            continue
        mac = parse_mac(record.get("mac_address"))
        if mac is None:
            LOG.debug("Skipping interface %s without a valid MAC", name)
            continue
        result[name] = {
            "ip": _ip(record.get("ipv4_address")) or _ip(record.get("ipv6_address")),
            "mac": mac,
            "client_id": record.get("client_id"),
            "pxe": mac == pxe_mac,
        }
    return result


def _ip(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    value = value.split("%", 1)[0]  # fe80::1%eth0: the scope is not part of the address
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return None
    return value


def _eligible(
    interfaces: dict[str, dict[str, Any]], pxe_mac: str | None, add_ports: str
) -> dict[str, dict[str, Any]]:
    if not interfaces:
        raise ProcessingError("No interfaces supplied by the ramdisk")
    if pxe_mac is None and add_ports == "pxe":
        LOG.warning("No boot interface in the data: using all interfaces with an IP address")
    result = {}
    for name, iface in interfaces.items():
        ip = iface["ip"]
        if name == "lo" or (ip and ipaddress.ip_address(ip).is_loopback):
            continue
        if add_ports == "pxe" and pxe_mac and not iface["pxe"]:
            continue
        if add_ports != "all" and not ip:
            continue
        result[name] = iface
    if not result:
        names = sorted(interfaces)
        more = f" and {len(names) - 10} more" if len(names) > 10 else ""
        raise ProcessingError(
            f"No suitable interfaces found among {', '.join(names[:10])}{more} "
            f"([processing] add_ports = {add_ports})"
        )
    return result


def _add_ports(context: ProcessingContext, use_pxe_flag: bool) -> None:
    known = set(port_view.existing(context)) | set(port_view.added(context))
    for iface in context.data["interfaces"].values():
        if iface["mac"] in known:
            continue
        port: dict[str, Any] = {
            "address": iface["mac"],
            "pxe_enabled": iface["pxe"] if use_pxe_flag else True,
        }
        if iface.get("client_id"):
            port["extra"] = {"client-id": iface["client_id"]}
        context.changes.ports.add.append(port)
        known.add(iface["mac"])


def _delete_ports(context: ProcessingContext, keep_ports: str) -> None:
    if keep_ports == "present":
        expected = {iface["mac"] for iface in context.data["all_interfaces"].values()}
    elif keep_ports == "added":
        expected = set(context.data["macs"])
    else:
        return
    for mac, port in port_view.existing(context).items():
        if mac not in expected:
            LOG.info(
                "[node %s] deleting port %s: its MAC %s is not in %s",
                context.node.uuid,
                port.uuid,
                mac,
                sorted(expected),
            )
            context.changes.ports.delete.append(port.uuid)


def _fix_pxe_enabled(context: ProcessingContext) -> None:
    existing = port_view.existing(context)
    for iface in context.data["interfaces"].values():
        port = existing.get(iface["mac"])
        if port is not None and port.pxe_enabled != iface["pxe"]:
            port_view.record_patch(
                context,
                port.uuid,
                {"op": "replace", "path": "/pxe_enabled", "value": iface["pxe"]},
            )
