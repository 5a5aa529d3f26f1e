"""The optional processing hooks: capabilities, pci_devices, extra_hardware, raid_device,
physnet_cidr_map and accelerators, on real ramdisk payloads."""

import json

import pytest

from inspector.errors import ConfigError
from inspector.processing import hooks
from inspector.processing.hooks import base
from tests.unit.test_hooks import make_conf, make_node, make_port, payload, process


@pytest.fixture
def conf():
    return make_conf()


# ------------------------------------------------------------------ capabilities


def test_cpu_flag_capabilities(conf):
    context = process(conf, payload("large"), "capabilities")
    assert context.changes.capabilities == {
        "cpu_aes": "true",
        "cpu_hugepages": "true",
        "cpu_hugepages_1g": "true",
    }


def test_boot_mode_capability_when_enabled(conf):
    conf.set_override("boot_mode", True, "capabilities")
    context = process(conf, payload("large"), "capabilities")
    assert context.changes.capabilities["boot_mode"] == "uefi"
    context = process(conf, payload("thismachine"), "capabilities")
    assert context.changes.capabilities["boot_mode"] == "bios"


def test_boot_mode_absent_from_the_inventory(conf):
    conf.set_override("boot_mode", True, "capabilities")
    context = process(conf, payload("4nic"), "capabilities")
    assert context.changes.capabilities == {}


def test_custom_cpu_flags_map(conf):
    conf.set_override("cpu_flags", {"fpu": "cpu_fpu", "sgx": "cpu_sgx"}, "capabilities")
    context = process(conf, payload("large"), "capabilities")
    assert context.changes.capabilities == {"cpu_fpu": "true"}


# ------------------------------------------------------------------ pci_devices


def test_pci_aliases_count_devices(conf):
    conf.set_override(
        "alias",
        [
            '{"vendor_id": "8086", "product_id": "2000", "name": "intel_2000"}',
            '{"vendor_id": "8086", "product_id": "2027", "name": "intel_2027"}',
            '{"vendor_id": "10de", "product_id": "1eb8", "name": "tesla_t4"}',
        ],
        "pci_devices",
    )
    data = payload("large")
    data["pci_devices"].append(dict(data["pci_devices"][0], bus="0000:99:00.0"))
    context = process(conf, data, "pci_devices")
    assert context.changes.capabilities == {"intel_2000": "2", "intel_2027": "1"}


def test_invalid_pci_aliases_are_ignored(conf, caplog):
    conf.set_override(
        "alias",
        [
            "not json",
            '{"vendor_id": "8086", "name": "no product"}',
            '{"vendor_id": "1af4", "product_id": "1041", "name": "virtio_net"}',
        ],
        "pci_devices",
    )
    context = process(conf, payload("thismachine"), "pci_devices")
    assert context.changes.capabilities == {"virtio_net": "1"}
    assert "Error parsing [pci_devices] alias 'not json'" in caplog.text


def test_no_pci_devices_in_the_data(conf):
    conf.set_override(
        "alias", ['{"vendor_id": "8086", "product_id": "2000", "name": "x"}'], "pci_devices"
    )
    context = process(conf, payload("4nic"), "pci_devices")
    assert context.changes.capabilities == {}


# ------------------------------------------------------------------ extra_hardware


def test_extra_hardware_data_becomes_a_nested_dict(conf):
    data = payload("large")
    data["data"] = [
        ["cpu", "logical", "number", "64"],
        ["cpu", "physical_0", "vendor", "GenuineIntel"],
        ["disk", "sda", "size", "447"],
        ["disk", "sda", "rotational", "0"],
        ["network", "eno1", "serial", "52:54:00:aa:bb:01"],
    ]
    context = process(conf, data, "extra_hardware")
    assert context.data["extra"] == {
        "cpu": {"logical": {"number": 64}, "physical_0": {"vendor": "GenuineIntel"}},
        "disk": {"sda": {"size": 447, "rotational": 0}},
        "network": {"eno1": {"serial": "52:54:00:aa:bb:01"}},
    }
    assert "data" not in context.data
    assert context.changes.patch == []


def test_extra_hardware_in_another_format_is_dropped(conf):
    data = payload("large")
    data["data"] = [["cpu", "logical", "64"]]
    context = process(conf, data, "extra_hardware")
    assert "extra" not in context.data
    assert "data" not in context.data


def test_extra_hardware_with_unhashable_keys_is_dropped(conf):
    data = payload("large")
    data["data"] = [["cpu", "logical", "number", "64"], [["disk"], "sda", "size", "447"]]
    context = process(conf, data, "extra_hardware")
    assert "extra" not in context.data


def test_extra_hardware_absent(conf):
    context = process(conf, payload("thismachine"), "extra_hardware")
    assert "extra" not in context.data


# ------------------------------------------------------------------ raid_device

LARGE_SERIALS = [f"SYN{n:08d}" for n in range(12)]


def test_raid_device_first_run_stores_the_serials(conf):
    context = process(conf, payload("large"), "raid_device")
    assert context.changes.patch == [
        {"op": "add", "path": "/extra/block_devices", "value": {"serials": LARGE_SERIALS}}
    ]
    assert context.changes.properties == {}


def test_raid_device_second_run_sets_the_root_device(conf):
    node = make_node(extra={"block_devices": {"serials": LARGE_SERIALS[1:]}})
    context = process(conf, payload("large"), "raid_device", node=node)
    assert context.changes.patch == [{"op": "remove", "path": "/extra/block_devices"}]
    assert context.changes.properties == {"root_device": {"serial": "SYN00000000"}}


@pytest.mark.parametrize("previous", [LARGE_SERIALS, LARGE_SERIALS[2:]])
def test_raid_device_needs_exactly_one_new_serial(conf, previous):
    node = make_node(extra={"block_devices": {"serials": previous}})
    context = process(conf, payload("large"), "raid_device", node=node)
    assert context.changes.patch == []
    assert context.changes.properties == {}


def test_raid_device_known_root_device_or_no_serials(conf):
    node = make_node(properties={"root_device": {"name": "/dev/sda"}})
    assert process(conf, payload("large"), "raid_device", node=node).changes.patch == []
    assert process(conf, payload("4nic"), "raid_device").changes.patch == []


# ------------------------------------------------------------------ physnet_cidr_map

EXISTING_ETH3 = "66:55:44:33:22:11"


def test_physnet_of_existing_and_new_ports(conf):
    conf.set_override("add_ports", "all", "processing")
    conf.set_override("cidr_map", ["1.2.1.0/25:physnet_a", "10.0.0.0/8:physnet_b"], "port_physnet")
    context = process(
        conf,
        payload("4nic"),
        "validate_interfaces",
        "physnet_cidr_map",
        ports=[make_port(EXISTING_ETH3, pxe_enabled=False)],
    )
    assert context.changes.ports.patch == {
        f"port-{EXISTING_ETH3}": [{"op": "add", "path": "/physical_network", "value": "physnet_a"}]
    }
    physnets = {p["address"]: p.get("physical_network") for p in context.changes.ports.add}
    assert physnets == {
        "11:22:33:44:55:66": "physnet_a",
        "12:12:21:12:21:12": None,  # no IP address
        "7c:fe:90:29:26:52": "physnet_a",
    }


@pytest.mark.parametrize(
    ("current", "overwrite", "patched"),
    [
        ("physnet_a", True, False),
        ("other", True, True),
        ("other", False, False),
        (None, False, True),
    ],
)
def test_physnet_of_a_port_that_has_one(conf, current, overwrite, patched):
    conf.set_override("overwrite_existing", overwrite, "processing")
    conf.set_override("cidr_map", ["1.2.1.0/24:physnet_a"], "port_physnet")
    port = make_port("11:22:33:44:55:66", physical_network=current)
    context = process(
        conf, payload("4nic"), "validate_interfaces", "physnet_cidr_map", ports=[port]
    )
    assert bool(context.changes.ports.patch) is patched


def test_physnet_from_the_ipv6_address(conf):
    conf.set_override("cidr_map", ["10.0.0.0/8:v4", "fd00::/64:physnet_v6"], "port_physnet")
    context = process(conf, payload("thismachine"), "validate_interfaces", "physnet_cidr_map")
    assert context.changes.ports.add[0]["physical_network"] == "physnet_v6"


@pytest.mark.parametrize("item", ["1.2.3.0/33:x", "1.2.3.1/24:x", "nonsense", "1.2.3.0/24:"])
def test_invalid_cidr_map_is_a_config_error(conf, item):
    conf.set_override("cidr_map", [item], "port_physnet")
    conf.set_override("processing_hooks", "validate_interfaces,physnet_cidr_map", "processing")
    with pytest.raises(ConfigError, match=r"\[port_physnet\] cidr_map"):
        hooks.load(conf)


# ------------------------------------------------------------------ accelerators

TESLA = {"vendor_id": "10de", "product_id": "1eb8", "bus": "0000:3b:00.0", "class": "030200"}


def test_known_accelerators_from_the_in_tree_list(conf):
    data = payload("thismachine")
    data["pci_devices"].append(TESLA)
    context = process(conf, data, "accelerators")
    assert context.changes.properties == {
        "accelerators": [
            {
                "vendor_id": "10de",
                "device_id": "1eb8",
                "type": "GPU",
                "device_info": "NVIDIA Corporation Tesla T4",
                "pci_address": "0000:3b:00.0",
            }
        ]
    }


def test_no_known_accelerator(conf):
    assert process(conf, payload("large"), "accelerators").changes.properties == {}
    assert process(conf, payload("4nic"), "accelerators").changes.properties == {}


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_known_devices_file(conf, tmp_path, suffix):
    devices = {
        "pci_devices": [
            {"vendor_id": "8086", "device_id": "2001", "type": "FPGA", "device_info": "x"}
        ]
    }
    path = tmp_path / f"known.{suffix}"
    if suffix == "json":
        path.write_text(json.dumps(devices))
    else:
        path.write_text(
            'pci_devices:\n  - vendor_id: "8086"\n    device_id: "2001"\n'
            "    type: FPGA\n    device_info: x\n"
        )
    conf.set_override("known_devices", str(path), "accelerators")
    context = process(conf, payload("large"), "accelerators")
    assert context.changes.properties["accelerators"] == [
        {**devices["pci_devices"][0], "pci_address": "0000:01:00.0"}
    ]


@pytest.mark.parametrize(
    "text", ["pci_devices: {}\n", "other: []\n", "pci_devices:\n  - vendor_id: '1'\n", "{{"]
)
def test_invalid_known_devices_file(conf, tmp_path, text):
    path = tmp_path / "known.yaml"
    path.write_text(text)
    conf.set_override("known_devices", str(path), "accelerators")
    conf.set_override("processing_hooks", "accelerators", "processing")
    with pytest.raises(ConfigError, match=r"\[accelerators\] known_devices"):
        hooks.load(conf)


def test_missing_known_devices_file(conf, tmp_path):
    conf.set_override("known_devices", str(tmp_path / "nope.yaml"), "accelerators")
    conf.set_override("processing_hooks", "accelerators", "processing")
    with pytest.raises(ConfigError, match="cannot read"):
        hooks.load(conf)


# ------------------------------------------------------------------ everything at once


def test_every_hook_on_the_4nic_fixture(conf):
    conf.set_override("add_ports", "active", "processing")
    conf.set_override("cidr_map", ["1.2.1.0/24:physnet_a"], "port_physnet")
    names = list(base.BUILTIN)
    context = process(conf, payload("4nic"), *names, ports=[make_port(EXISTING_ETH3)])
    changes = context.changes
    assert changes.properties == {
        "local_gb": "999",
        "cpus": "4",
        "cpu_arch": "x86_64",
        "memory_mb": "12288",
    }
    assert [port["address"] for port in changes.ports.add] == [
        "11:22:33:44:55:66",
        "7c:fe:90:29:26:52",
    ]
    assert changes.ports.add[0]["local_link_connection"] == {
        "switch_id": "11:22:33:aa:bb:cc",
        "port_id": "734",
    }
    assert changes.ports.add[0]["physical_network"] == "physnet_a"
    assert changes.ports.patch == {
        f"port-{EXISTING_ETH3}": [
            {"op": "replace", "path": "/pxe_enabled", "value": False},
            {"op": "add", "path": "/physical_network", "value": "physnet_a"},
        ]
    }
    assert context.data["all_interfaces"]["eth1"]["lldp_processed"] == {
        "switch_chassis_id": "11:22:33:aa:bb:cc",
        "switch_port_id": "734",
    }
