"""Hardware drift: what changed between two introspections' data, item by item. Pure:
no configuration, no I/O; the store keeps the history, processing and the API call this.

Each change is {"path", "kind" (added, removed, changed), "old", "new"}; a path starts
with its category (`system.serial`, `disks[/dev/sdb].size`, `nics[<mac>]`, `pci[8086:1572]`).
"""

from collections import Counter
from typing import Any

from inspector.processing.hooks import lldp

#: The categories of a drift's summary, in the order changes are listed.
#: The key of the processed data that holds the drift (rules read it there).
KEY = "drift"
CATEGORIES = ("system", "firmware", "cpu", "memory", "disks", "nics", "pci", "lldp", "bmc")
ADDED = "added"
REMOVED = "removed"
CHANGED = "changed"
#: A disk's fields compared once it is matched (its identity aside).
DISK_FIELDS = ("size", "model", "rotational")
#: A NIC's fields compared once it is matched by MAC.
NIC_FIELDS = ("driver", "vendor", "product", "speed_mbps")

Change = dict[str, Any]


def _value(value: Any) -> Any:
    """None for what a ramdisk reports when it does not know (None, "", [])."""
    return None if value in (None, "", [], {}) else value


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _scalars(data: dict[str, Any]) -> dict[str, Any]:
    """The single-valued facts: {path: value} (None when unknown)."""
    inventory = _mapping(data.get("inventory"))
    system = _mapping(inventory.get("system_vendor"))
    firmware = _mapping(system.get("firmware"))
    cpu = _mapping(inventory.get("cpu"))
    memory = _mapping(inventory.get("memory"))
    flags = cpu.get("flags")
    return {
        "system.vendor": system.get("manufacturer"),
        "system.product": system.get("product_name"),
        "system.serial": system.get("serial_number"),
        "system.uuid": system.get("uuid"),
        "firmware.vendor": firmware.get("vendor"),
        "firmware.version": firmware.get("version"),
        "firmware.build_date": firmware.get("build_date"),
        "cpu.model": cpu.get("model_name"),
        "cpu.count": cpu.get("count"),
        "cpu.architecture": cpu.get("architecture"),
        "cpu.flags_count": len(flags) if isinstance(flags, list) and flags else None,
        # physical_mb is what DIMMs add up to; total varies with the ramdisk's kernel.
        "memory.physical_mb": memory.get("physical_mb"),
        "memory.total": None if memory.get("physical_mb") else memory.get("total"),
        "bmc.address": inventory.get("bmc_address"),
        "bmc.v6address": inventory.get("bmc_v6address"),
        "bmc.mac": inventory.get("bmc_mac"),
    }


def _change(path: str, old: Any, new: Any, *, field: bool = False) -> Change | None:
    """A change of the value at `path`; a field of a matched item always "changed"."""
    old, new = _value(old), _value(new)
    if old == new:
        return None
    kind = CHANGED if field else ADDED if old is None else REMOVED if new is None else CHANGED
    return {"path": path, "kind": kind, "old": old, "new": new}


def _disk(disk: dict[str, Any]) -> dict[str, Any]:
    return {name: disk.get(name) for name in ("name", "serial", "wwn", *DISK_FIELDS)}


def _identity(disk: dict[str, Any]) -> str:
    """Disks match by serial, else WWN, else name (a renamed disk is the same disk)."""
    for field in ("serial", "wwn"):
        if _value(disk.get(field)) is not None:
            return f"{field}:{disk[field]}"
    return f"name:{disk.get('name')}"


def _disks(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    before = {_identity(d): d for d in _items(_mapping(old.get("inventory")).get("disks"))}
    after = {_identity(d): d for d in _items(_mapping(new.get("inventory")).get("disks"))}
    changes: list[Change] = []
    for key in before.keys() & after.keys():
        path = f"disks[{after[key].get('name')}]"
        for field in DISK_FIELDS:
            was, now = before[key].get(field), after[key].get(field)
            change = _change(f"{path}.{field}", was, now, field=True)
            if change is not None:
                changes.append(change)
    gone = {before[k].get("name"): before[k] for k in before.keys() - after.keys()}
    came = {after[k].get("name"): after[k] for k in after.keys() - before.keys()}
    for name in sorted(gone.keys() | came.keys(), key=str):
        # A disk gone and another in its place under the same name: one replacement.
        old_disk, new_disk = gone.get(name), came.get(name)
        changes.append(
            {
                "path": f"disks[{name}]",
                "kind": ADDED if old_disk is None else REMOVED if new_disk is None else CHANGED,
                "old": None if old_disk is None else _disk(old_disk),
                "new": None if new_disk is None else _disk(new_disk),
            }
        )
    return sorted(changes, key=lambda change: change["path"])


def _nics(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    interfaces = _items(_mapping(data.get("inventory")).get("interfaces"))
    return {str(i["mac_address"]).lower(): i for i in interfaces if i.get("mac_address")}


def _nic(nic: dict[str, Any]) -> dict[str, Any]:
    return {name: nic.get(name) for name in ("name", *NIC_FIELDS)}


def _nic_changes(before: dict, after: dict) -> list[Change]:
    changes: list[Change] = []
    for mac in sorted(before.keys() | after.keys()):
        old, new = before.get(mac), after.get(mac)
        if old is None or new is None:
            changes.append(
                {
                    "path": f"nics[{mac}]",
                    "kind": ADDED if old is None else REMOVED,
                    "old": None if old is None else _nic(old),
                    "new": None if new is None else _nic(new),
                }
            )
            continue
        for field in NIC_FIELDS:
            change = _change(f"nics[{mac}].{field}", old.get(field), new.get(field), field=True)
            if change is not None:
                changes.append(change)
    return changes


def _neighbour(nic: dict[str, Any]) -> dict[str, Any] | None:
    """The switch and port a NIC's LLDP names; None without LLDP."""
    tlvs = nic.get("lldp")
    if not tlvs:
        return None
    values = lldp.parse(tlvs)
    neighbour = {"switch": values.get(lldp.CHASSIS_ID), "port": values.get(lldp.PORT_ID)}
    return neighbour if any(neighbour.values()) else None


def _lldp_changes(before: dict, after: dict) -> list[Change]:
    """LLDP neighbours of the NICs present in both (a new NIC is one change, not two)."""
    changes = []
    for mac in sorted(before.keys() & after.keys()):
        change = _change(f"lldp[{mac}]", _neighbour(before[mac]), _neighbour(after[mac]))
        if change is not None:
            changes.append(change)
    return changes


def _pci(data: dict[str, Any]) -> Counter:
    return Counter(
        f"{device.get('vendor_id')}:{device.get('product_id')}"
        for device in _items(data.get("pci_devices"))
    )


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Every change from `old`'s hardware to `new`'s (introspection data, raw or
    processed), by category then path."""
    old, new = _mapping(old), _mapping(new)
    before, after = _scalars(old), _scalars(new)
    changes = [c for path in before if (c := _change(path, before[path], after[path])) is not None]
    changes += _disks(old, new)
    old_nics, new_nics = _nics(old), _nics(new)
    changes += _nic_changes(old_nics, new_nics)
    changes += _lldp_changes(old_nics, new_nics)
    old_pci, new_pci = _pci(old), _pci(new)
    for key in sorted(old_pci.keys() | new_pci.keys()):
        change = _change(f"pci[{key}]", old_pci.get(key), new_pci.get(key))
        if change is not None:
            changes.append(change)
    order = {name: index for index, name in enumerate(CATEGORIES)}
    return sorted(changes, key=lambda change: order[category(change["path"])])


def category(path: str) -> str:
    """The category a change's path starts with."""
    return path.split("[", 1)[0].split(".", 1)[0]


def summary(changes: list[Change]) -> dict[str, int]:
    """{category: number of changes}, every category present (0 when unchanged)."""
    counts = Counter(category(change["path"]) for change in changes)
    return {name: counts.get(name, 0) for name in CATEGORIES}


def document(base: int | None, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The `drift` key of processed data: the changes since `old`, the data of the
    introspection `base`; none without a base (a node's first introspection)."""
    changes = [] if old is None else compare(old, new)
    return {"base": base, "changes": changes, "summary": summary(changes)}
