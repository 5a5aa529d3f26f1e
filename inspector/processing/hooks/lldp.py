"""LLDP TLVs as IPA reports them ([type, hex value] pairs) parsed into ironic-inspector's
lldp_processed names: the 802.1AB basic management set and the 802.1Q and 802.3
organisationally specific TLVs. Pure: no configuration, no I/O.
"""

import binascii
import ipaddress
import logging
import struct
from collections.abc import Callable
from typing import Any

LOG = logging.getLogger(__name__)

CHASSIS_ID = "switch_chassis_id"
PORT_ID = "switch_port_id"
PORT_DESCRIPTION = "switch_port_description"
SYSTEM_NAME = "switch_system_name"
SYSTEM_DESCRIPTION = "switch_system_description"
CAPABILITIES_SUPPORT = "switch_capabilities_support"
CAPABILITIES_ENABLED = "switch_capabilities_enabled"
MGMT_ADDRESSES = "switch_mgmt_addresses"
UNTAGGED_VLAN_ID = "switch_port_untagged_vlan_id"
PROTOCOL_VLAN_ENABLED = "switch_port_protocol_vlan_enabled"
PROTOCOL_VLAN_SUPPORT = "switch_port_protocol_vlan_support"
PROTOCOL_VLAN_IDS = "switch_port_protocol_vlan_ids"
VLANS = "switch_port_vlans"
PROTOCOL_IDENTITIES = "switch_protocol_identities"
MGMT_VLAN_ID = "switch_port_management_vlan_id"
LINK_AGGREGATION_ENABLED = "switch_port_link_aggregation_enabled"
LINK_AGGREGATION_SUPPORT = "switch_port_link_aggregation_support"
LINK_AGGREGATION_ID = "switch_port_link_aggregation_id"
AUTONEGOTIATION_ENABLED = "switch_port_autonegotiation_enabled"
AUTONEGOTIATION_SUPPORT = "switch_port_autonegotiation_support"
PHYSICAL_CAPABILITIES = "switch_port_physical_capabilities"
MAU_TYPE = "switch_port_mau_type"
MTU = "switch_port_mtu"

OUI_802_1 = "0080c2"
OUI_802_3 = "00120f"

#: System capability bits (802.1AB 8.5.8), in ironic-inspector's order.
_SYSTEM_CAPABILITIES = (
    (0x0002, "Repeater"),
    (0x0004, "Bridge"),
    (0x0008, "WLAN"),
    (0x0010, "Router"),
    (0x0020, "Telephone"),
    (0x0040, "DOCSIS cable device"),
    (0x0080, "Station only"),
    (0x0100, "C-Vlan"),
    (0x0200, "S-Vlan"),
    (0x0400, "TPMR"),
)

#: PMD auto-negotiation advertised capability bits (RFC 4836 ifMauAutoNegCapBits).
_PMD_CAPABILITIES = (
    (0x4000, "10BASE-T hdx"),
    (0x2000, "10BASE-T fdx"),
    (0x1000, "10BASE-T4"),
    (0x0800, "100BASE-TX hdx"),
    (0x0400, "100BASE-TX fdx"),
    (0x0200, "100BASE-T2 hdx"),
    (0x0100, "100BASE-T2 fdx"),
    (0x0080, "PAUSE fdx"),
    (0x0040, "Asym PAUSE fdx"),
    (0x0020, "Sym PAUSE fdx"),
    (0x0010, "Asym and Sym PAUSE fdx"),
    (0x0008, "1000BASE-X hdx"),
    (0x0004, "1000BASE-X fdx"),
    (0x0002, "1000BASE-T hdx"),
    (0x0001, "1000BASE-T fdx"),
)

#: Operational MAU types (RFC 4836 ifMauTypeList), by index.
MAU_TYPES = (
    "Unknown", "AUI", "10BASE-5", "FOIRL", "10BASE-2", "10BASE-T duplex mode unknown",
    "10BASE-FP", "10BASE-FB", "10BASE-FL duplex mode unknown", "10BROAD36",
    "10BASE-T half duplex", "10BASE-T full duplex", "10BASE-FL half duplex",
    "10BASE-FL full duplex", "100 BASE-T4", "100BASE-TX half duplex",
    "100BASE-TX full duplex", "100BASE-FX half duplex", "100BASE-FX full duplex",
    "100BASE-T2 half duplex", "100BASE-T2 full duplex", "1000BASE-X half duplex",
    "1000BASE-X full duplex", "1000BASE-LX half duplex", "1000BASE-LX full duplex",
    "1000BASE-SX half duplex", "1000BASE-SX full duplex", "1000BASE-CX half duplex",
    "1000BASE-CX full duplex", "1000BASE-T half duplex", "1000BASE-T full duplex",
    "10GBASE-X", "10GBASE-LX4", "10GBASE-R", "10GBASE-ER", "10GBASE-LR", "10GBASE-SR",
    "10GBASE-W", "10GBASE-EW", "10GBASE-LW", "10GBASE-SW", "10GBASE-CX4", "2BASE-TL",
    "10PASS-TS", "100BASE-BX10D", "100BASE-BX10U", "100BASE-LX10", "1000BASE-BX10D",
    "1000BASE-BX10U", "1000BASE-LX10", "1000BASE-PX10D", "1000BASE-PX10U",
    "1000BASE-PX20D", "1000BASE-PX20U",
)  # fmt: skip

Values = dict[str, Any]


def parse(tlvs: Any) -> Values:
    """[[type, hex], ...] -> {name: value}. A TLV that cannot be parsed is logged and
    skipped; for single-valued names the first TLV wins."""
    values: Values = {}
    for index, item in enumerate(tlvs if isinstance(tlvs, list) else ()):
        try:
            tlv_type, raw = int(item[0]), binascii.unhexlify(item[1])
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            # The item is the ramdisk's (of any size): named by its place, never quoted.
            LOG.warning(
                "LLDP TLV #%d is not a [type, hexadecimal value] pair (%s)",
                index,
                type(exc).__name__,
            )
            continue
        handler = _BASIC.get(tlv_type)
        if handler is None:
            LOG.debug("LLDP TLV type %d not handled", tlv_type)
            continue
        try:
            handler(values, raw)
        except (ValueError, IndexError, struct.error) as exc:
            LOG.warning("LLDP TLV type %d cannot be parsed: %s", tlv_type, exc)
    return values


def _u16(raw: bytes, offset: int = 0) -> int:
    return struct.unpack_from(">H", raw, offset)[0]


def _exact(raw: bytes, size: int) -> bytes:
    if len(raw) != size:
        raise ValueError(f"expected {size} bytes, got {len(raw)}")
    return raw


def _mac(raw: bytes) -> str:
    if len(raw) < 6:
        raise ValueError("a MAC address needs 6 bytes")
    return ":".join(f"{byte:02x}" for byte in raw[:6])


def _address(raw: bytes) -> str | None:
    """An IANA address family byte, then the address (IPv4, IPv6 or MAC); None otherwise."""
    family, body = raw[0], raw[1:]
    if family == 1:
        return str(ipaddress.IPv4Address(body[:4]))
    if family == 2:
        return str(ipaddress.IPv6Address(body[:16]))
    if family == 6:
        return _mac(body)
    return None


def _identifier(raw: bytes, strings: set[int], mac: int, address: int) -> str | None:
    subtype, body = raw[0], raw[1:]
    if subtype in strings:
        return body.decode("utf-8")
    if subtype == mac:
        return _mac(body)
    if subtype == address:
        return _address(body)
    return None


def _chassis_id(values: Values, raw: bytes) -> None:
    value = _identifier(raw, strings={1, 2, 3, 6, 7}, mac=4, address=5)
    if value is not None:
        values.setdefault(CHASSIS_ID, value)


def _port_id(values: Values, raw: bytes) -> None:
    value = _identifier(raw, strings={1, 2, 5, 7}, mac=3, address=4)
    if value is not None:
        values.setdefault(PORT_ID, value)


def _text(name: str) -> Callable[[Values, bytes], None]:
    def handle(values: Values, raw: bytes) -> None:
        values.setdefault(name, raw.decode("utf-8"))

    return handle


def _capabilities(values: Values, raw: bytes) -> None:
    _exact(raw, 4)
    system, enabled = _u16(raw, 0), _u16(raw, 2)
    values.setdefault(CAPABILITIES_SUPPORT, [n for bit, n in _SYSTEM_CAPABILITIES if system & bit])
    values.setdefault(CAPABILITIES_ENABLED, [n for bit, n in _SYSTEM_CAPABILITIES if enabled & bit])


def _mgmt_address(values: Values, raw: bytes) -> None:
    address = _address(raw[1:])  # raw[0] is the length of the address string
    if address:
        values.setdefault(MGMT_ADDRESSES, []).append(address)


def _org_specific(values: Values, raw: bytes) -> None:
    oui, subtype, body = raw[:3].hex(), raw[3], raw[4:]
    table = {OUI_802_1: _DOT1, OUI_802_3: _DOT3}.get(oui)
    if table is None:
        LOG.debug("LLDP organizationally unique ID %s not recognized", oui)
        return
    handler = table.get(subtype)
    if handler is None:
        LOG.debug("LLDP subtype %d of OUI %s not handled", subtype, oui)
        return
    handler(values, body)


def _ignore(values: Values, raw: bytes) -> None:
    """TLVs carrying nothing for the processed data (TTL, end of LLDPDU)."""


def _u16_value(name: str) -> Callable[[Values, bytes], None]:
    def handle(values: Values, raw: bytes) -> None:
        values.setdefault(name, _u16(raw))

    return handle


def _protocol_vlan(values: Values, raw: bytes) -> None:
    _exact(raw, 3)
    values.setdefault(PROTOCOL_VLAN_ENABLED, bool(raw[0] & 0x04))
    values.setdefault(PROTOCOL_VLAN_SUPPORT, bool(raw[0] & 0x02))
    values.setdefault(PROTOCOL_VLAN_IDS, []).append(_u16(raw, 1))


def _vlan_name(values: Values, raw: bytes) -> None:
    vlan_id, length = _u16(raw), raw[2]
    if len(raw) < 3 + length:
        raise ValueError("VLAN name shorter than its length")
    name = raw[3 : 3 + length].rstrip(b"\x00").decode("utf-8")
    values.setdefault(VLANS, []).append({"name": name, "id": vlan_id})


def _protocol_identity(values: Values, raw: bytes) -> None:
    length = raw[0]
    if len(raw) < 1 + length:
        raise ValueError("protocol identity shorter than its length")
    values.setdefault(PROTOCOL_IDENTITIES, []).append(raw[1 : 1 + length].hex())


def _link_aggregation(values: Values, raw: bytes) -> None:
    _exact(raw, 5)
    values.setdefault(LINK_AGGREGATION_ENABLED, bool(raw[0] & 0x02))
    values.setdefault(LINK_AGGREGATION_SUPPORT, bool(raw[0] & 0x01))
    values.setdefault(LINK_AGGREGATION_ID, struct.unpack_from(">I", raw, 1)[0])


def _mac_phy(values: Values, raw: bytes) -> None:
    _exact(raw, 5)
    pmd, mau = _u16(raw, 1), _u16(raw, 3)
    if mau >= len(MAU_TYPES):
        raise ValueError(f"invalid MAU type {mau}")
    values.setdefault(AUTONEGOTIATION_ENABLED, bool(raw[0] & 0x02))
    values.setdefault(AUTONEGOTIATION_SUPPORT, bool(raw[0] & 0x01))
    values.setdefault(PHYSICAL_CAPABILITIES, sorted(n for bit, n in _PMD_CAPABILITIES if pmd & bit))
    values.setdefault(MAU_TYPE, MAU_TYPES[mau])


_Handler = Callable[[Values, bytes], None]

_BASIC: dict[int, _Handler] = {
    0: _ignore,
    1: _chassis_id,
    2: _port_id,
    3: _ignore,
    4: _text(PORT_DESCRIPTION),
    5: _text(SYSTEM_NAME),
    6: _text(SYSTEM_DESCRIPTION),
    7: _capabilities,
    8: _mgmt_address,
    127: _org_specific,
}

#: 802.1Q subtypes (802.1Q-2014 Annex D).
_DOT1: dict[int, _Handler] = {
    1: _u16_value(UNTAGGED_VLAN_ID),
    2: _protocol_vlan,
    3: _vlan_name,
    4: _protocol_identity,
    6: _u16_value(MGMT_VLAN_ID),
    7: _link_aggregation,
}

#: 802.3 subtypes (802.3 clause 79); link aggregation (3) is deprecated but still sent.
_DOT3: dict[int, _Handler] = {
    1: _mac_phy,
    3: _link_aggregation,
    4: _u16_value(MTU),
}
