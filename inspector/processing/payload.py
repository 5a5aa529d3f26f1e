"""The ramdisk payload's shape and size: the JSON Schema of every field the hooks and the
worker read, and the [limits] on its lists. /v1/continue applies both at the door (a 400);
processing applies both again before the hooks (data stored before, or a reapply's body),
so that a hook never meets a wrong type.

Only fields someone reads are typed; every other key, known to ironic-python-agent or
not, is kept as it is. Numbers and booleans (sizes, counts, rotational) are not typed:
the hooks convert them, as ironic-inspector did ("4" CPUs are 4).
"""

from typing import Any

import jsonschema
from jsonschema import validators

from inspector.fastschema import fast_check
from inspector.processing.context import ProcessingError

_STRING = {"type": ["string", "null"]}
#: [[type, hexadecimal value], ...] as ironic-python-agent reports an interface's LLDP.
_TLVS = {"type": ["array", "null"], "items": {"type": "array"}}


def _strings(*names: str) -> dict[str, dict]:
    return {name: _STRING for name in names}


INTERFACE = {
    "type": "object",
    "properties": {
        **_strings("name", "mac_address", "ipv4_address", "ipv6_address", "client_id"),
        "lldp": _TLVS,
    },
}
DISK = {
    "type": "object",
    "properties": _strings(
        "name",
        "model",
        "vendor",
        "serial",
        "wwn",
        "wwn_with_extension",
        "wwn_vendor_extension",
        "hctl",
        "by_path",
    ),
}
PCI_DEVICE = {"type": "object", "properties": _strings("vendor_id", "product_id", "bus")}

#: POST /v1/continue's body, and the raw data processing starts from.
SCHEMA = {
    "type": "object",
    "properties": {
        "inventory": {
            "type": "object",
            "properties": {
                "interfaces": {"type": "array", "items": INTERFACE},
                "disks": {"type": ["array", "null"], "items": DISK},
                "boot": {
                    "type": ["object", "null"],
                    "properties": _strings("current_boot_mode", "pxe_interface"),
                },
                "cpu": {
                    "type": ["object", "null"],
                    "properties": {
                        "architecture": _STRING,
                        "flags": {"type": ["array", "null"], "items": {"type": "string"}},
                    },
                },
                "memory": {"type": ["object", "null"]},
                **_strings("bmc_address", "bmc_v6address"),
            },
        },
        "pci_devices": {"type": ["array", "null"], "items": PCI_DEVICE},
        "lldp_raw": {"type": ["object", "null"]},
        "macs": {"type": ["array", "null"], "items": _STRING},
        "root_disk": {"type": ["object", "null"]},
        # extra_hardware's eDeploy records: [[a, b, c, value], ...].
        "data": {"type": ["array", "null"], "items": {"type": "array"}},
        **_strings("boot_interface", "error", "logs", "ipmi_address", "ipmi_v6address"),
    },
}

_VALIDATOR = validators.validator_for(SCHEMA)(SCHEMA)
#: Valid or not in plain Python (a real payload in tens of microseconds; jsonschema's walk
#: takes a millisecond): jsonschema only words what is wrong.
_VALID = fast_check(SCHEMA) or _VALIDATOR.is_valid
#: The words for JSON Schema's types, and for the Python types of parsed JSON.
_SCHEMA_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "null": "null",
}
_JSON_TYPES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def where(path: Any) -> str:
    """A field's place in the payload: inventory.interfaces[2].lldp."""
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return text.lstrip(".") or "the payload"


def wrong_type(data: Any) -> str | None:
    """The first field of `data` whose type the schema refuses, in a few words that
    never quote the value (it may be large); None when every type is right."""
    if _VALID(data):
        return None
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(data))
    if error is None:
        return None
    if error.validator != "type":  # the schema has no other keyword; kept for safety
        return f"{where(error.absolute_path)}: {error.message}"
    wanted = error.validator_value
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    found = _JSON_TYPES.get(type(error.instance), type(error.instance).__name__)
    must = " or ".join(_SCHEMA_TYPES.get(name, name) for name in names)
    return f"{where(error.absolute_path)} must be {must}, not {found}"


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list | dict) else 0


def _over(field: str, count: int, what: str, option: str, limit: int) -> str:
    return f"{field} has {count} {what}, more than [limits] {option} = {limit}"


def excess(data: Any, limits: Any) -> str | None:
    """The first limit of `limits` (the [limits] group) the payload exceeds, naming the
    field, its count and the option; None within every limit. Tolerates wrong types
    (it only counts lists), so it may run before or after the type check."""
    if not isinstance(data, dict):
        return None
    inventory = given if isinstance(given := data.get("inventory"), dict) else {}
    counted = (
        ("inventory.interfaces", inventory.get("interfaces"), "interfaces", "max_interfaces"),
        ("macs", data.get("macs"), "MACs", "max_interfaces"),
        ("lldp_raw", data.get("lldp_raw"), "interfaces", "max_interfaces"),
        ("inventory.disks", inventory.get("disks"), "disks", "max_disks"),
        ("pci_devices", data.get("pci_devices"), "PCI devices", "max_pci_devices"),
    )
    for field, value, what, option in counted:
        count, limit = _count(value), getattr(limits, option)
        if count > limit:
            return _over(field, count, what, option, limit)
    interfaces = inventory.get("interfaces")
    for index, interface in enumerate(interfaces if isinstance(interfaces, list) else ()):
        if isinstance(interface, dict):
            field = f"inventory.interfaces[{index}].lldp"
            found = _lldp_excess(field, interface.get("lldp"), limits)
            if found:
                return found
    lldp_raw = data.get("lldp_raw")
    for name, tlvs in lldp_raw.items() if isinstance(lldp_raw, dict) else ():
        found = _lldp_excess(f"lldp_raw.{name}", tlvs, limits)
        if found:
            return found
    return None


def _lldp_excess(field: str, tlvs: Any, limits: Any) -> str | None:
    if not isinstance(tlvs, list):
        return None
    if len(tlvs) > limits.max_lldp_tlvs:
        return _over(field, len(tlvs), "TLVs", "max_lldp_tlvs", limits.max_lldp_tlvs)
    most = 2 * limits.max_lldp_tlv_size  # hexadecimal: two characters an octet
    for index, tlv in enumerate(tlvs):
        value = tlv[1] if isinstance(tlv, list) and len(tlv) > 1 else None
        if isinstance(value, str) and len(value) > most:
            return (
                f"{field}[{index}] has a value of {(len(value) + 1) // 2} octets, more than "
                f"[limits] max_lldp_tlv_size = {limits.max_lldp_tlv_size}"
            )
    return None


def refusal(data: Any, limits: Any) -> str | None:
    """Why the payload cannot be processed: a wrong type, else the first limit of
    `limits` ([limits]) it is over, naming the field; None when it can."""
    problem = wrong_type(data)
    if problem is not None:
        return f"Invalid ramdisk data: {problem}"
    problem = excess(data, limits)
    if problem is not None:
        return f"Ramdisk data over a limit: {problem}"
    return None


def check(data: Any, conf: Any) -> None:
    """ProcessingError naming the field when the raw data has a wrong type or is over a
    limit of conf's [limits] (data stored before these checks, or a reapply's body)."""
    problem = refusal(data, conf.limits)
    if problem is not None:
        raise ProcessingError(problem)
