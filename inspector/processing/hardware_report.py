"""The fleet hardware report: nodes' processed data grouped by one category (system, firmware,
CPU, memory, disks, NICs, PCI devices), counted in one pass over a stream of nodes; never
holds more than the groups. Reading the stream is the store's (Store.processed_data).
"""

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

#: A group's key: the category's fields, as (name, value) pairs in a fixed order.
Key = tuple[tuple[str, Any], ...]


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    """A field's value, None for a missing or empty one (dmidecode's blanks)."""
    if value is None or isinstance(value, dict | list):
        return None
    text = str(value).strip()
    return text or None


def _system(data: dict) -> list[Key]:
    vendor = _dict(_dict(data.get("inventory")).get("system_vendor"))
    return [
        (
            ("vendor", _text(vendor.get("manufacturer"))),
            ("product", _text(vendor.get("product_name"))),
        )
    ]


def _firmware(data: dict) -> list[Key]:
    vendor = _dict(_dict(data.get("inventory")).get("system_vendor"))
    firmware = _dict(vendor.get("firmware"))
    return [
        (("vendor", _text(firmware.get("vendor"))), ("version", _text(firmware.get("version"))))
    ]


def _cpu(data: dict) -> list[Key]:
    cpu = _dict(_dict(data.get("inventory")).get("cpu"))
    count = cpu.get("count")
    return [
        (
            ("model", _text(cpu.get("model_name"))),
            ("count", count if isinstance(count, int) else None),
        )
    ]


def _memory(data: dict) -> list[Key]:
    memory = _dict(_dict(data.get("inventory")).get("memory"))
    size = memory.get("physical_mb")
    if not isinstance(size, int) or isinstance(size, bool):
        size = data.get("memory_mb") if isinstance(data.get("memory_mb"), int) else None
    return [(("memory_mb", size),)]


def _disks(data: dict) -> list[Key]:
    disks = _list(_dict(data.get("inventory")).get("disks"))
    return [
        (
            ("model", _text(disk.get("model"))),
            ("size", disk.get("size") if isinstance(disk.get("size"), int) else None),
        )
        for disk in disks
        if isinstance(disk, dict)
    ]


def _nic_firmware(data: dict, name: Any) -> str | None:
    """The interface's firmware version, where the payload carries it: its own field, or
    the extra hardware data's network section (hardware's `firmware-version`)."""
    network = _dict(_dict(data.get("extra")).get("network"))
    return _text(_dict(network.get(name)).get("firmware-version")) if name else None


def _nics(data: dict) -> list[Key]:
    keys: list[Key] = []
    for nic in _list(_dict(data.get("inventory")).get("interfaces")):
        if not isinstance(nic, dict):
            continue
        firmware = _text(nic.get("firmware_version")) or _nic_firmware(data, nic.get("name"))
        keys.append(
            (
                ("vendor", _text(nic.get("vendor"))),
                ("product", _text(nic.get("product"))),
                ("driver", _text(nic.get("driver"))),
                ("firmware_version", firmware),
            )
        )
    return keys


def _pci(data: dict) -> list[Key]:
    return [
        (
            ("vendor_id", _text(device.get("vendor_id"))),
            ("product_id", _text(device.get("product_id"))),
        )
        for device in _list(data.get("pci_devices"))
        if isinstance(device, dict)
    ]


#: Category -> the keys of a node's items in it (one for system, firmware, cpu, memory).
CATEGORIES: dict[str, Callable[[dict], list[Key]]] = {
    "system": _system,
    "firmware": _firmware,
    "cpu": _cpu,
    "memory": _memory,
    "disks": _disks,
    "nics": _nics,
    "pci": _pci,
}


def label(category: str, key: Key) -> str:
    """A group's key as a person reads it; `unknown` for what the payload did not say."""
    fields = dict(key)
    if category == "memory":
        size = fields["memory_mb"]
        return "unknown" if size is None else f"{size} MiB"
    if category == "disks":
        size = fields["size"]
        shown = "unknown size" if size is None else f"{size / 1e9:g} GB"
        return f"{fields['model'] or 'unknown model'} {shown}"
    if category == "cpu":
        count = fields["count"]
        return f"{fields['model'] or 'unknown model'} x{'?' if count is None else count}"
    if category == "pci":
        return f"{fields['vendor_id'] or '?'}:{fields['product_id'] or '?'}"
    if category == "nics":
        text = " ".join(f"{v}" for n, v in key if n != "firmware_version" and v) or "unknown"
        return text + (
            f" firmware {fields['firmware_version']}" if fields["firmware_version"] else ""
        )
    return " ".join(str(value) for _, value in key if value) or "unknown"


def is_changed(data: dict) -> bool:
    """Whether the node's last introspection found changes from the one before: its
    processed data's `drift.changes` is not empty (no drift: not changed)."""
    return bool(_list(_dict(data.get("drift")).get("changes")))


@dataclasses.dataclass
class Group:
    key: Key
    nodes: int = 0
    items: int = 0
    changed: int = 0
    members: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def build(
    category: str, rows: Iterable[tuple[str, str | None, dict]], *, members: bool = False
) -> dict[str, Any]:
    """The report of `category` over rows of (node uuid, name, processed data), read once:
    groups largest first (then by label), each counting its nodes, its items and the
    nodes that changed; with `members`, listing its nodes."""
    extract = CATEGORIES[category]
    groups: dict[Key, Group] = {}
    total = 0
    for uuid, name, data in rows:
        total += 1
        changed = is_changed(data)
        counts: dict[Key, int] = {}
        for key in extract(data):
            counts[key] = counts.get(key, 0) + 1
        for key, items in counts.items():
            group = groups.get(key) or groups.setdefault(key, Group(key))
            group.nodes += 1
            group.items += items
            group.changed += changed
            if members:
                group.members.append({"uuid": uuid, "name": name})
    ordered = sorted(groups.values(), key=lambda g: (-g.nodes, label(category, g.key)))
    return {
        "by": category,
        "nodes": total,
        "groups": [_group(category, g, members) for g in ordered],
    }


def _group(category: str, group: Group, members: bool) -> dict[str, Any]:
    shown = {
        "key": dict(group.key),
        "label": label(category, group.key),
        "nodes": group.nodes,
        "items": group.items,
        "changed": group.changed,
    }
    if members:
        shown["members"] = sorted(group.members, key=lambda m: (m["name"] or "", m["uuid"]))
    return shown
