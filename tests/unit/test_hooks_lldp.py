"""LLDP: the TLV parser, the lldp_basic hook and the local_link_connection hook."""

import pytest

from inspector.processing.hooks import lldp
from tests.unit.test_hooks import make_conf, make_port, payload, process


@pytest.fixture
def conf():
    return make_conf()


ETH1 = "11:22:33:44:55:66"


def text(value):
    return value.encode().hex()


#: Every TLV the parser understands, plus some it must skip.
TLVS = [
    [7, "0014"],  # system capabilities of the wrong length: skipped, does not block
    [1, "04" + "112233aabbcc"],  # chassis ID, MAC subtype
    [2, "05" + text("Ethernet1/7")],  # port ID, ifName subtype
    [3, "0078"],  # TTL
    [4, text("uplink to node-1")],
    [5, text("switch-a.example.org")],
    [6, text("Example OS 1.2")],
    [7, "00140004"],  # supports bridge and router, bridge enabled
    [8, "05" + "01" + "c0000201" + "0200000001" + "00"],  # management address 192.0.2.1
    [8, "11" + "02" + "20010db8000000000000000000000001" + "0200000001" + "00"],
    [127, "0080c2" + "01" + "0064"],  # untagged VLAN 100
    [127, "0080c2" + "02" + "06" + "00c8"],  # port and protocol VLAN 200, enabled, supported
    [127, "0080c2" + "03" + "0064" + "07" + text("vlan100")],
    [127, "0080c2" + "03" + "00c8" + "07" + text("vlan200")],
    [127, "0080c2" + "04" + "02" + "88cc"],  # protocol identity
    [127, "0080c2" + "06" + "000a"],  # management VLAN 10
    [127, "0080c2" + "07" + "03" + "00000010"],  # link aggregation enabled, id 16
    [127, "00120f" + "01" + "03" + "6c01" + "ffff"],  # MAU type out of range: skipped
    [127, "00120f" + "01" + "03" + "6c01" + "001e"],  # autonegotiation, 1000BASE-T full
    [127, "00120f" + "04" + "2328"],  # MTU 9000
    [127, "aabbcc" + "01" + "00"],  # unknown OUI
    [127, "0080c2" + "63" + "00"],  # unknown 802.1 subtype
    [5, "zz"],  # not hexadecimal
    [5, "ff"],  # not UTF-8
    ["x"],
    [42, "00"],  # unknown TLV type
    [0, ""],  # end of LLDPDU
]

PARSED = {
    "switch_chassis_id": "11:22:33:aa:bb:cc",
    "switch_port_id": "Ethernet1/7",
    "switch_port_description": "uplink to node-1",
    "switch_system_name": "switch-a.example.org",
    "switch_system_description": "Example OS 1.2",
    "switch_capabilities_support": ["Bridge", "Router"],
    "switch_capabilities_enabled": ["Bridge"],
    "switch_mgmt_addresses": ["192.0.2.1", "2001:db8::1"],
    "switch_port_untagged_vlan_id": 100,
    "switch_port_protocol_vlan_enabled": True,
    "switch_port_protocol_vlan_support": True,
    "switch_port_protocol_vlan_ids": [200],
    "switch_port_vlans": [{"name": "vlan100", "id": 100}, {"name": "vlan200", "id": 200}],
    "switch_protocol_identities": ["88cc"],
    "switch_port_management_vlan_id": 10,
    "switch_port_link_aggregation_enabled": True,
    "switch_port_link_aggregation_support": True,
    "switch_port_link_aggregation_id": 16,
    "switch_port_autonegotiation_enabled": True,
    "switch_port_autonegotiation_support": True,
    "switch_port_physical_capabilities": [
        "1000BASE-T fdx",
        "100BASE-TX fdx",
        "100BASE-TX hdx",
        "10BASE-T fdx",
        "10BASE-T hdx",
    ],
    "switch_port_mau_type": "1000BASE-T full duplex",
    "switch_port_mtu": 9000,
}


def test_parse_every_tlv():
    assert lldp.parse(TLVS) == PARSED


@pytest.mark.parametrize(
    ("tlv", "expected"),
    [
        ([1, "07" + text("sw1")], {"switch_chassis_id": "sw1"}),
        ([1, "05" + "01" + "0a000001"], {"switch_chassis_id": "10.0.0.1"}),
        ([1, "09" + "00"], {}),  # unknown chassis ID subtype
        ([2, "03" + "aabbccddeeff"], {"switch_port_id": "aa:bb:cc:dd:ee:ff"}),
        ([2, "03" + "aabb"], {}),  # MAC too short
        ([2, "04" + "06" + "aabbccddeeff"], {"switch_port_id": "aa:bb:cc:dd:ee:ff"}),
        ([8, "02" + "09" + "00"], {}),  # unknown address family
        ([127, "0080c2" + "07" + "03" + "0000"], {}),  # link aggregation too short
        ([127, "0080c2" + "03" + "0064" + "09" + text("vlan")], {}),  # name shorter than said
    ],
)
def test_parse_one_tlv(tlv, expected):
    assert lldp.parse([tlv]) == expected


def test_parse_what_is_not_a_list():
    assert lldp.parse(None) == {}
    assert lldp.parse("0104") == {}


# ------------------------------------------------------------------ lldp_basic


def test_lldp_basic_on_the_4nic_fixture(conf):
    context = process(conf, payload("4nic"), "validate_interfaces", "lldp_basic")
    interfaces = context.data["all_interfaces"]
    assert interfaces["eth1"]["lldp_processed"] == {
        "switch_chassis_id": "11:22:33:aa:bb:cc",
        "switch_port_id": "734",
    }
    assert "lldp_processed" not in interfaces["eth2"]
    assert context.changes.ports.patch == {}


def test_lldp_basic_prefers_lldp_raw(conf):
    data = payload("4nic")
    data["lldp_raw"] = {"eth3": TLVS}
    context = process(conf, data, "validate_interfaces", "lldp_basic")
    assert context.data["all_interfaces"]["eth3"]["lldp_processed"] == PARSED


def test_lldp_basic_without_lldp(conf):
    context = process(conf, payload("thismachine"), "validate_interfaces", "lldp_basic")
    assert "lldp_processed" not in context.data["all_interfaces"]["eth0"]


# ------------------------------------------------------------------ local_link_connection


def llc_patch(**values):
    return [
        {"op": "add", "path": f"/local_link_connection/{key}", "value": value}
        for key, value in values.items()
    ]


@pytest.mark.parametrize(
    "names",
    [
        ("validate_interfaces", "local_link_connection"),
        ("validate_interfaces", "lldp_basic", "local_link_connection"),
    ],
)
def test_existing_port_gets_switch_and_port_id(conf, names):
    context = process(conf, payload("4nic"), *names, ports=[make_port(ETH1)])
    assert context.changes.ports.patch == {
        f"port-{ETH1}": llc_patch(switch_id="11:22:33:aa:bb:cc", port_id="734")
    }


def test_new_port_gets_its_local_link_connection(conf):
    context = process(conf, payload("4nic"), "validate_interfaces", "local_link_connection")
    assert context.changes.ports.add == [
        {
            "address": ETH1,
            "pxe_enabled": True,
            "local_link_connection": {"switch_id": "11:22:33:aa:bb:cc", "port_id": "734"},
        }
    ]


def test_existing_values_kept_without_overwrite(conf):
    conf.set_override("overwrite_existing", False, "processing")
    port = make_port(ETH1, local_link_connection={"switch_id": "00:00:00:00:00:01"})
    context = process(
        conf, payload("4nic"), "validate_interfaces", "local_link_connection", ports=[port]
    )
    assert context.changes.ports.patch == {f"port-{ETH1}": llc_patch(port_id="734")}


def test_switch_info_from_the_system_name_never_replaces_one(conf):
    data = payload("4nic")
    data["inventory"]["interfaces"][0]["lldp"].append([5, text("switch-a")])
    unset = make_port(ETH1)
    context = process(conf, data, "validate_interfaces", "local_link_connection", ports=[unset])
    assert context.changes.ports.patch[f"port-{ETH1}"][-1] == llc_patch(switch_info="switch-a")[0]
    configured = make_port(ETH1, local_link_connection={"switch_info": "tor-1", "port_id": "734"})
    context = process(
        conf, data, "validate_interfaces", "local_link_connection", ports=[configured]
    )
    assert context.changes.ports.patch == {f"port-{ETH1}": llc_patch(switch_id="11:22:33:aa:bb:cc")}


def test_chassis_id_that_is_not_a_mac_is_not_a_switch_id(conf):
    data = payload("4nic")
    data["inventory"]["interfaces"][0]["lldp"][0] = [1, "07" + text("sw1")]
    context = process(
        conf, data, "validate_interfaces", "local_link_connection", ports=[make_port(ETH1)]
    )
    assert context.changes.ports.patch == {f"port-{ETH1}": llc_patch(port_id="734")}


def test_ports_without_lldp_are_untouched(conf):
    conf.set_override("add_ports", "all", "processing")
    ports = [make_port("66:55:44:33:22:11", pxe_enabled=False)]
    context = process(
        conf, payload("4nic"), "validate_interfaces", "local_link_connection", ports=ports
    )
    assert context.changes.ports.patch == {}
    assert [p.get("local_link_connection") for p in context.changes.ports.add] == [
        {"switch_id": "11:22:33:aa:bb:cc", "port_id": "734"},
        None,
        None,
    ]
