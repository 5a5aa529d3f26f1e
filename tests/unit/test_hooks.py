"""Processing hooks: loading (order, unknown names, dependencies, entry points), running,
and the default hooks on real ramdisk payloads."""

import importlib.metadata
import json

import pytest

from inspector import conf as config
from inspector.conf import accelerators, capabilities, pci_devices, port_physnet
from inspector.errors import ConfigError
from inspector.ironic import IronicNode, IronicPort
from inspector.processing import hooks
from inspector.processing.context import ProcessingContext, ProcessingError
from inspector.processing.hooks import base, standard
from tests import fixtures

PAYLOADS = {
    "thismachine": fixtures.IPA,
    "dmidecode-error": fixtures.IPA_DMIDECODE_ERROR,
    "large": fixtures.LARGE_SERVER,
    "4nic": fixtures.FOUR_NIC,
    "apiref": fixtures.APIREF,
}
NODE_UUID = "5f1d0e0c-5c4a-4a5e-9a57-6d5bd35d2c3a"
DEFAULT_HOOKS = [
    "ramdisk_error",
    "root_disk_selection",
    "scheduler",
    "validate_interfaces",
    "capabilities",
    "pci_devices",
]
GiB = 1024**3


# ------------------------------------------------------------------ helpers


def make_conf():
    """The default configuration, with the hooks' option groups (registered here until
    inspector.conf lists them; registering the same options twice is harmless)."""
    conf = config.load([])
    for module in (capabilities, pci_devices, port_physnet, accelerators):
        conf.register_opts(module.OPTS, group=module.GROUP)
    return conf


@pytest.fixture
def conf():
    return make_conf()


def payload(name):
    return json.loads(PAYLOADS[name].read_text())


def make_node(**fields):
    return IronicNode.from_ironic(
        {"uuid": NODE_UUID, "provision_state": "inspecting", "driver": "ipmi", **fields}
    )


def make_port(mac, **fields):
    return IronicPort.from_ironic(
        {"uuid": f"port-{mac}", "node_uuid": NODE_UUID, "address": mac, **fields}
    )


def process(conf, data, *names, node=None, ports=()):
    """Load the named hooks and run them; the context they filled in."""
    conf.set_override("processing_hooks", ",".join(names), "processing")
    context = ProcessingContext(node=node or make_node(), ports=list(ports), data=data, conf=conf)
    hooks.run(hooks.load(conf), context)
    return context


def added_macs(context):
    return [port["address"] for port in context.changes.ports.add]


class RecordingHook(base.ProcessingHook):
    """An out-of-tree hook: records the calls (class-level, as load() instantiates it)."""

    calls: list = []

    def before_processing(self, data, conf):
        RecordingHook.calls.append(("before_processing", self.name, "inventory" in data))

    def before_update(self, context):
        RecordingHook.calls.append(("before_update", self.name, context.node.uuid))
        context.changes.capabilities["recorded"] = "true"


class LegacyHook:
    """ironic-inspector's plugin interface: it patches the node through node_info."""

    def before_update(self, introspection_data, node_info, **kwargs):
        node_info.update_properties(foo="bar")


def fake_entry_points(monkeypatch, group, name, value):
    real = importlib.metadata.entry_points

    def entry_points(**kwargs):
        if kwargs.get("group") == group:
            return [importlib.metadata.EntryPoint(name=name, value=value, group=group)]
        if kwargs.get("group") in (base.ENTRY_POINT_GROUP, base.LEGACY_ENTRY_POINT_GROUP):
            return []
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


# ------------------------------------------------------------------ loading


def test_load_default_list_in_order(conf):
    loaded = hooks.load(conf)
    assert [hook.name for hook in loaded] == DEFAULT_HOOKS
    assert isinstance(loaded[0], standard.RamdiskErrorHook)
    assert isinstance(loaded[3], standard.ValidateInterfacesHook)


def test_load_keeps_the_configured_order_and_drops_repeats(conf):
    conf.set_override(
        "processing_hooks",
        "$processing.default_processing_hooks, extra_hardware,lldp_basic,,scheduler",
        "processing",
    )
    names = [hook.name for hook in hooks.load(conf)]
    assert names == [*DEFAULT_HOOKS, "extra_hardware", "lldp_basic"]


def test_every_builtin_hook_loads(conf):
    conf.set_override("processing_hooks", ",".join(base.BUILTIN), "processing")
    loaded = hooks.load(conf)
    assert [hook.name for hook in loaded] == list(base.BUILTIN)
    assert all(isinstance(hook, hooks.ProcessingHook) for hook in loaded)


def test_unknown_hook_is_named_with_the_known_ones(conf):
    conf.set_override("processing_hooks", "ramdisk_error,nonexistent", "processing")
    with pytest.raises(ConfigError) as error:
        hooks.load(conf)
    assert "'nonexistent'" in str(error.value)
    assert "known hooks:" in str(error.value)
    assert "validate_interfaces" in str(error.value)


@pytest.mark.parametrize(
    "names",
    [
        "lldp_basic",
        "lldp_basic,validate_interfaces",
        "ramdisk_error,local_link_connection,validate_interfaces",
        "physnet_cidr_map",
    ],
)
def test_dependency_missing_or_listed_after_is_an_error(conf, names):
    conf.set_override("processing_hooks", names, "processing")
    with pytest.raises(ConfigError, match="needs validate_interfaces listed before it"):
        hooks.load(conf)


def test_dependency_listed_before_loads(conf):
    conf.set_override(
        "processing_hooks", "validate_interfaces,lldp_basic,local_link_connection", "processing"
    )
    assert [h.name for h in hooks.load(conf)][-1] == "local_link_connection"


def test_out_of_tree_hook_through_entry_point(conf, monkeypatch):
    fake_entry_points(
        monkeypatch, base.ENTRY_POINT_GROUP, "recorder", "tests.unit.test_hooks:RecordingHook"
    )
    RecordingHook.calls = []
    context = process(conf, payload("thismachine"), "ramdisk_error", "recorder")
    assert RecordingHook.calls == [
        ("before_processing", "recorder", True),
        ("before_update", "recorder", NODE_UUID),
    ]
    assert context.changes.capabilities == {"recorded": "true"}


def test_out_of_tree_hook_appears_in_the_known_list(conf, monkeypatch):
    fake_entry_points(
        monkeypatch, base.ENTRY_POINT_GROUP, "recorder", "tests.unit.test_hooks:RecordingHook"
    )
    conf.set_override("processing_hooks", "recorderx", "processing")
    with pytest.raises(ConfigError, match="recorder,"):
        hooks.load(conf)


def test_legacy_group_accepts_a_hook_with_our_interface(conf, monkeypatch):
    fake_entry_points(
        monkeypatch,
        base.LEGACY_ENTRY_POINT_GROUP,
        "recorder",
        "tests.unit.test_hooks:RecordingHook",
    )
    conf.set_override("processing_hooks", "recorder", "processing")
    assert isinstance(hooks.load(conf)[0], RecordingHook)


def test_legacy_group_refuses_an_ironic_inspector_plugin(conf, monkeypatch):
    fake_entry_points(
        monkeypatch, base.LEGACY_ENTRY_POINT_GROUP, "legacy", "tests.unit.test_hooks:LegacyHook"
    )
    conf.set_override("processing_hooks", "legacy", "processing")
    with pytest.raises(ConfigError, match="ironic-inspector's plugin interface"):
        hooks.load(conf)


def test_entry_point_that_is_not_a_hook(conf, monkeypatch):
    fake_entry_points(
        monkeypatch, base.ENTRY_POINT_GROUP, "legacy", "tests.unit.test_hooks:LegacyHook"
    )
    conf.set_override("processing_hooks", "legacy", "processing")
    with pytest.raises(ConfigError, match="not a subclass"):
        hooks.load(conf)


def test_entry_point_that_cannot_be_imported(conf, monkeypatch):
    fake_entry_points(monkeypatch, base.ENTRY_POINT_GROUP, "broken", "no.such.module:Hook")
    conf.set_override("processing_hooks", "broken", "processing")
    with pytest.raises(ConfigError, match="cannot load hook broken"):
        hooks.load(conf)


def test_builtin_names_win_over_entry_points(conf, monkeypatch):
    fake_entry_points(
        monkeypatch, base.ENTRY_POINT_GROUP, "scheduler", "tests.unit.test_hooks:LegacyHook"
    )
    conf.set_override("processing_hooks", "scheduler", "processing")
    assert isinstance(hooks.load(conf)[0], standard.SchedulerHook)


def test_run_calls_every_before_processing_first(conf):
    calls = []

    class First(base.ProcessingHook):
        def before_processing(self, data, conf):
            calls.append("first.before_processing")

        def before_update(self, context):
            calls.append("first.before_update")

    class Second(First):
        def before_processing(self, data, conf):
            calls.append("second.before_processing")

        def before_update(self, context):
            calls.append("second.before_update")

    context = ProcessingContext(node=make_node(), ports=[], data={}, conf=conf)
    hooks.run([First(conf), Second(conf)], context)
    assert calls == [
        "first.before_processing",
        "second.before_processing",
        "first.before_update",
        "second.before_update",
    ]


def test_a_processing_error_stops_the_run(conf):
    with pytest.raises(ProcessingError):
        process(conf, payload("dmidecode-error"), *DEFAULT_HOOKS)


def test_a_hook_meeting_malformed_data_fails_naming_itself(conf):
    # Past the raw data's schema (an out-of-tree hook, or a field no schema types).
    data = payload("4nic")
    data["inventory"]["interfaces"].append("eth9")
    with pytest.raises(ProcessingError) as info:
        process(conf, data, "validate_interfaces", "lldp_basic")
    assert str(info.value).startswith("Hook lldp_basic (before_update) cannot process")
    assert isinstance(info.value.__cause__, AttributeError)


@pytest.mark.parametrize("error", [KeyError("cpu"), TypeError("unhashable"), IndexError(0)])
def test_an_out_of_tree_hook_failing_on_the_data_is_named(conf, error):
    class Fragile(base.ProcessingHook):
        def before_processing(self, data, conf):
            raise error

    hook = Fragile(conf)
    hook.name = "fragile"
    context = ProcessingContext(node=make_node(), ports=[], data={}, conf=conf)
    with pytest.raises(ProcessingError, match=r"^Hook fragile \(before_processing\) cannot"):
        hooks.run([hook], context)


def test_disabled_add_ports_with_keep_added_is_a_config_error(conf):
    conf.set_override("add_ports", "disabled", "processing")
    conf.set_override("keep_ports", "added", "processing")
    with pytest.raises(ConfigError, match="keep_ports"):
        hooks.load(conf)


# ------------------------------------------------------------------ default pipeline


def test_default_hooks_on_this_machine(conf):
    context = process(conf, payload("thismachine"), *DEFAULT_HOOKS)
    assert context.changes.properties == {
        "local_gb": "255",
        "cpus": "2",
        "cpu_arch": "x86_64",
        "memory_mb": "24576",
    }
    assert context.changes.capabilities == {
        "cpu_aes": "true",
        "cpu_hugepages": "true",
        "cpu_hugepages_1g": "true",
    }
    # No boot_interface: add_ports=pxe falls back to the interfaces with an IP address,
    # and with the PXE MAC unknown the new port keeps Ironic's default pxe_enabled.
    assert context.changes.ports.add == [{"address": "02:fc:00:00:00:01", "pxe_enabled": True}]
    assert context.data["macs"] == ["02:fc:00:00:00:01"]
    assert context.data["local_gb"] == 255
    assert context.data["ipmi_address"] is None
    assert context.changes.ports.delete == []


def test_default_hooks_on_the_api_reference_sample(conf):
    context = process(conf, payload("apiref"), *DEFAULT_HOOKS)
    assert context.data["macs"] == ["52:54:00:4e:3d:30"]
    assert context.data["all_interfaces"]["eth0"]["pxe"] is True
    assert context.data["all_interfaces"]["eth1"]["pxe"] is False
    assert context.changes.ports.add == [{"address": "52:54:00:4e:3d:30", "pxe_enabled": True}]
    assert context.changes.properties["local_gb"] == "12"  # 13 GiB disk minus 1
    assert context.changes.properties["memory_mb"] == "2048"
    assert context.data["ipmi_address"] == "192.167.2.134"


# ------------------------------------------------------------------ ramdisk_error


def test_ramdisk_error_fails_with_the_ramdisk_message(conf):
    with pytest.raises(ProcessingError) as error:
        process(conf, payload("dmidecode-error"), "ramdisk_error")
    assert error.value.message.startswith("Ramdisk reported error: The following errors")
    assert "failed to run dmidecode" in error.value.message


def test_ramdisk_error_passes_good_data(conf):
    context = process(conf, payload("thismachine"), "ramdisk_error")
    assert context.changes.properties == {}


# ------------------------------------------------------------------ root_disk_selection


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        ({"serial": "SYN00000005"}, "/dev/sdf"),
        ({"wwn": "0x5000c5000000000b"}, "/dev/sdl"),
        ({"size": ">= 1000", "rotational": False}, "/dev/sdc"),
        ({"model": "MZ7LH7T6HMLA", "hctl": "0:0:9:0"}, "/dev/sdj"),
        ({"name": "/dev/sdb"}, "/dev/sdb"),
        ({"serial": "<in> SYN00000011"}, "/dev/sdl"),
        ({"vendor": "ata", "size": "<= 500"}, "/dev/sda"),
    ],
)
def test_root_device_hints_choose_the_disk(conf, hints, expected):
    node = make_node(properties={"root_device": hints})
    context = process(conf, payload("large"), "root_disk_selection", node=node)
    assert context.data["root_disk"]["name"] == expected
    size = context.data["root_disk"]["size"]
    assert context.data["local_gb"] == size // GiB - 1
    assert context.changes.properties == {"local_gb": str(size // GiB - 1)}


def test_large_root_disk_local_gb(conf):
    node = make_node(properties={"root_device": {"serial": "SYN00000002"}})
    context = process(conf, payload("large"), "root_disk_selection", node=node)
    assert context.changes.properties["local_gb"] == "7152"  # 7681501126656 B = 7153.9 GiB


def test_no_hints_keeps_the_ramdisk_root_disk(conf):
    context = process(conf, payload("large"), "root_disk_selection")
    assert context.data["root_disk"]["name"] == "/dev/sda"
    assert context.changes.properties["local_gb"] == "446"  # 447.1 GiB minus 1


def test_without_partitioning_spacing(conf):
    conf.set_override("disk_partitioning_spacing", False, "processing")
    context = process(conf, payload("large"), "root_disk_selection")
    assert context.changes.properties["local_gb"] == "447"


@pytest.mark.parametrize(
    "hints", [{"serial": "NOPE"}, {"size": 447}, {"rotational": True}, {"model": "<or> a <or> b"}]
)
def test_no_disk_matching_the_hints_is_an_error(conf, hints):
    node = make_node(properties={"root_device": hints})
    with pytest.raises(ProcessingError, match="No disks satisfied root device hints"):
        process(conf, payload("large"), "root_disk_selection", node=node)


@pytest.mark.parametrize(
    "hints", [{"colour": "red"}, {"size": "big"}, {"size": -1}, {"serial": 12}, "sda"]
)
def test_invalid_hints_are_an_error(conf, hints):
    node = make_node(properties={"root_device": hints})
    with pytest.raises(ProcessingError, match="failed to validate"):
        process(conf, payload("large"), "root_disk_selection", node=node)


def test_skip_block_devices(conf):
    node = make_node(
        properties={
            "root_device": {"model": "SSDSC2KB480G8"},
            "skip_block_devices": [{"name": "/dev/sda"}],
        }
    )
    context = process(conf, payload("large"), "root_disk_selection", node=node)
    assert context.data["root_disk"]["name"] == "/dev/sdb"


def test_no_root_disk_from_the_ramdisk_guesses_the_smallest_big_enough(conf):
    data = payload("4nic")
    del data["root_disk"]
    data["inventory"]["disks"].append({"name": "/dev/sdc", "size": 2 * GiB})
    context = process(conf, data, "root_disk_selection")
    assert context.data["root_disk"]["name"] == "/dev/sdb"  # 20 GiB; the 2 GiB one is skipped
    assert context.changes.properties["local_gb"] == "19"


def test_no_disk_at_all_is_a_diskless_node(conf):
    data = payload("thismachine")
    del data["root_disk"]
    data["inventory"]["disks"] = [{"name": "/dev/tiny", "size": 3 * GiB}]
    context = process(conf, data, "root_disk_selection")
    assert "root_disk" not in context.data
    assert context.data["local_gb"] == 0
    assert context.changes.properties == {"local_gb": "0"}


def test_existing_local_gb_kept_without_overwrite(conf):
    conf.set_override("overwrite_existing", False, "processing")
    node = make_node(properties={"local_gb": "100", "cpus": "8"})
    context = process(conf, payload("large"), "root_disk_selection", "scheduler", node=node)
    assert context.data["local_gb"] == 446
    assert "local_gb" not in context.changes.properties
    assert "cpus" not in context.changes.properties
    assert context.changes.properties["memory_mb"] == "524288"


def test_missing_inventory_is_an_error(conf):
    with pytest.raises(ProcessingError, match="inventory is empty or missing"):
        process(conf, {"root_disk": {}}, "root_disk_selection")


# ------------------------------------------------------------------ scheduler


def test_scheduler_properties(conf):
    context = process(conf, payload("4nic"), "scheduler")
    assert context.changes.properties == {"cpus": "4", "cpu_arch": "x86_64", "memory_mb": "12288"}
    assert (context.data["cpus"], context.data["memory_mb"]) == (4, 12288)


def test_scheduler_memory_from_total_without_physical_mb(conf):
    data = payload("thismachine")
    del data["inventory"]["memory"]["physical_mb"]
    context = process(conf, data, "scheduler")
    assert context.changes.properties["memory_mb"] == str(25276510208 // 1024**2)


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (("memory",), "memory_mb"),
        (("cpu", "count"), "cpus"),
        (("cpu", "architecture"), "cpu_arch"),
    ],
)
def test_scheduler_missing_data_is_named(conf, path, named):
    data = payload("4nic")
    place = data["inventory"]
    for key in path[:-1]:
        place = place[key]
    del place[path[-1]]
    with pytest.raises(ProcessingError, match=f"missing: {named} "):
        process(conf, data, "scheduler")


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        (("cpu", "count"), "many", "invalid: cpus (inventory.cpu.count is a str, "),
        (("cpu", "count"), 0, "invalid: cpus (inventory.cpu.count is 0, "),
        (("cpu", "count"), [4], "invalid: cpus (inventory.cpu.count is a list, "),
        (("memory", "physical_mb"), "lots", "invalid: memory_mb (inventory.memory.physical_mb "),
    ],
)
def test_scheduler_data_present_but_unusable_is_invalid_not_missing(conf, path, value, said):
    data = payload("4nic")
    place = data["inventory"]
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = value
    if path[0] == "memory":
        place.pop("total", None)
    with pytest.raises(ProcessingError) as failed:
        process(conf, data, "scheduler")
    assert said in failed.value.message
    assert "missing" not in failed.value.message
    assert "not a positive integer" in failed.value.message


def test_scheduler_names_what_is_missing_and_what_is_invalid(conf):
    data = payload("4nic")
    data["inventory"]["cpu"]["count"] = "many"
    del data["inventory"]["cpu"]["architecture"]
    with pytest.raises(ProcessingError) as failed:
        process(conf, data, "scheduler")
    assert failed.value.message == (
        "The following required parameters are missing: cpu_arch "
        "(inventory.cpu.architecture); invalid: cpus (inventory.cpu.count is a str, not a "
        "positive integer)"
    )


# ------------------------------------------------------------------ validate_interfaces


FOUR_NIC_MACS = {
    "eth1": "11:22:33:44:55:66",
    "eth2": "12:12:21:12:21:12",
    "eth3": "66:55:44:33:22:11",
    "ib0": "7c:fe:90:29:26:52",
}


def test_interfaces_of_the_4nic_fixture(conf):
    context = process(conf, payload("4nic"), "validate_interfaces")
    data = context.data
    assert {name: iface["mac"] for name, iface in data["all_interfaces"].items()} == FOUR_NIC_MACS
    assert list(data["interfaces"]) == ["eth1"]  # add_ports = pxe, PXE MAC in the 01- form
    assert data["macs"] == ["11:22:33:44:55:66"]
    assert data["all_interfaces"]["eth1"] == {
        "ip": "1.2.1.2",
        "mac": "11:22:33:44:55:66",
        "client_id": None,
        "pxe": True,
    }
    assert context.changes.ports.add == [{"address": "11:22:33:44:55:66", "pxe_enabled": True}]
    assert data["ipmi_address"] == "1.2.3.4"


def test_add_ports_active_keeps_interfaces_with_an_ip(conf):
    conf.set_override("add_ports", "active", "processing")
    context = process(conf, payload("4nic"), "validate_interfaces")
    assert list(context.data["interfaces"]) == ["eth1", "eth3", "ib0"]
    ports = {port["address"]: port for port in context.changes.ports.add}
    assert ports["11:22:33:44:55:66"]["pxe_enabled"] is True
    assert ports["66:55:44:33:22:11"]["pxe_enabled"] is False
    # InfiniBand: the DHCP client id goes to the port's extra, as ironic-inspector does.
    assert ports["7c:fe:90:29:26:52"]["extra"] == {
        "client-id": "ff:00:00:00:00:00:02:00:00:02:c9:00:7c:fe:90:03:00:29:26:52"
    }


def test_add_ports_all_includes_interfaces_without_ip(conf):
    conf.set_override("add_ports", "all", "processing")
    context = process(conf, payload("4nic"), "validate_interfaces")
    assert added_macs(context) == list(FOUR_NIC_MACS.values())


def test_add_ports_disabled_creates_nothing(conf):
    conf.set_override("add_ports", "disabled", "processing")
    context = process(conf, payload("4nic"), "validate_interfaces")
    assert context.changes.ports.add == []
    assert context.data["macs"] == ["11:22:33:44:55:66", "66:55:44:33:22:11", "7c:fe:90:29:26:52"]


def test_pxe_flag_not_used_without_update_pxe_enabled(conf):
    conf.set_override("add_ports", "active", "processing")
    conf.set_override("update_pxe_enabled", False, "processing")
    context = process(conf, payload("4nic"), "validate_interfaces")
    assert {port["pxe_enabled"] for port in context.changes.ports.add} == {True}


def test_pxe_interface_of_the_large_server(conf):
    context = process(conf, payload("large"), "validate_interfaces")
    assert context.data["macs"] == ["52:54:00:aa:bb:01"]
    assert len(context.data["all_interfaces"]) == 4


def test_existing_ports_are_not_added_again(conf):
    ports = [make_port("11:22:33:44:55:66")]
    context = process(conf, payload("4nic"), "validate_interfaces", ports=ports)
    assert context.changes.ports.add == []
    assert context.changes.ports.patch == {}


def test_pxe_enabled_of_existing_ports_is_fixed(conf):
    conf.set_override("add_ports", "active", "processing")
    ports = [
        make_port("11:22:33:44:55:66", pxe_enabled=False),
        make_port("66:55:44:33:22:11", pxe_enabled=True),
        make_port("7c:fe:90:29:26:52", pxe_enabled=False),
    ]
    context = process(conf, payload("4nic"), "validate_interfaces", ports=ports)
    assert context.changes.ports.patch == {
        "port-11:22:33:44:55:66": [{"op": "replace", "path": "/pxe_enabled", "value": True}],
        "port-66:55:44:33:22:11": [{"op": "replace", "path": "/pxe_enabled", "value": False}],
    }


def test_pxe_enabled_kept_without_overwrite_existing(conf):
    conf.set_override("overwrite_existing", False, "processing")
    ports = [make_port("11:22:33:44:55:66", pxe_enabled=False)]
    context = process(conf, payload("4nic"), "validate_interfaces", ports=ports)
    assert context.changes.ports.patch == {}


def test_pxe_enabled_kept_when_the_pxe_mac_is_unknown(conf):
    ports = [make_port("02:fc:00:00:00:01", pxe_enabled=False)]
    context = process(conf, payload("thismachine"), "validate_interfaces", ports=ports)
    assert context.changes.ports.patch == {}


STALE = "aa:aa:aa:aa:aa:aa"


@pytest.mark.parametrize(
    ("keep_ports", "deleted"),
    [
        ("all", []),
        ("present", [f"port-{STALE}"]),
        ("added", [f"port-{STALE}", "port-66:55:44:33:22:11"]),
    ],
)
def test_keep_ports(conf, keep_ports, deleted):
    conf.set_override("keep_ports", keep_ports, "processing")
    ports = [make_port(STALE), make_port("66:55:44:33:22:11"), make_port("11:22:33:44:55:66")]
    context = process(conf, payload("4nic"), "validate_interfaces", ports=ports)
    assert context.changes.ports.delete == deleted


def test_ports_of_active_nodes_are_not_deleted_or_changed(conf):
    conf.set_override("keep_ports", "added", "processing")
    node = make_node(provision_state="active")
    ports = [make_port(STALE), make_port("66:55:44:33:22:11", pxe_enabled=True)]
    context = process(conf, payload("4nic"), "validate_interfaces", node=node, ports=ports)
    assert context.changes.ports.delete == []
    assert context.changes.ports.patch == {}
    assert added_macs(context) == ["11:22:33:44:55:66"]


def test_invalid_macs_and_loopback_are_skipped(conf):
    conf.set_override("add_ports", "all", "processing")
    data = payload("apiref")
    data["inventory"]["interfaces"] += [
        {"name": "lo", "mac_address": "00:00:00:00:00:00", "ipv4_address": "127.0.0.1"},
        {"name": "bad", "mac_address": "not-a-mac", "ipv4_address": "10.0.0.1"},
        {"name": "nomac", "ipv4_address": "10.0.0.2"},
        {"mac_address": "52:54:00:00:00:99"},
    ]
    context = process(conf, data, "validate_interfaces")
    assert set(context.data["all_interfaces"]) == {"eth0", "eth1", "lo"}
    assert set(context.data["interfaces"]) == {"eth0", "eth1"}


def test_no_suitable_interface_is_an_error(conf):
    data = payload("4nic")
    for iface in data["inventory"]["interfaces"]:
        iface.pop("ipv4_address", None)
    with pytest.raises(ProcessingError, match="No suitable interfaces"):
        process(conf, data, "validate_interfaces")


def test_no_valid_mac_is_an_error(conf):
    data = payload("thismachine")
    data["inventory"]["interfaces"][0]["mac_address"] = "zz"
    with pytest.raises(ProcessingError, match="No interfaces supplied"):
        process(conf, data, "validate_interfaces")


def test_no_interfaces_in_the_inventory_is_an_error(conf):
    data = payload("thismachine")
    data["inventory"]["interfaces"] = []
    with pytest.raises(ProcessingError, match="No network interfaces"):
        process(conf, data, "validate_interfaces")


def test_ipv6_with_a_scope_is_the_interface_ip(conf):
    conf.set_override("add_ports", "active", "processing")
    data = payload("thismachine")
    iface = data["inventory"]["interfaces"][0]
    iface["ipv4_address"] = None
    iface["ipv6_address"] = "fe80::fc:ff:fe00:1%eth0"
    context = process(conf, data, "validate_interfaces")
    assert context.data["interfaces"]["eth0"]["ip"] == "fe80::fc:ff:fe00:1"
