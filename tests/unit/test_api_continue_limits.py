"""POST /v1/continue refuses, before anything is looked up, stored or enqueued, a payload
over a [limits] option or with a field of the wrong type: a 400 naming the field."""

import base64
import copy
import logging

import pytest

from inspector.machine import State
from tests import fixtures
from tests.unit.test_api_continue import macs, waiting_node

IPA = fixtures.load(fixtures.IPA)
PXE_MAC = "52:54:00:00:00:01"
#: A real LLDP TLV (chassis ID, MAC subtype) as ironic-python-agent reports it.
TLV = [1, "04885a92ec5459"]


def mac(index):
    return "52:54:00:" + ":".join(f"{(index >> s) & 0xFF:02x}" for s in (16, 8, 0))


def interfaces(count, **fields):
    """`count` interfaces with fresh MACs and addresses (the first one PXE_MAC)."""
    return [
        {
            "name": f"eth{i}",
            "mac_address": PXE_MAC if i == 0 else mac(0x100000 + i),
            "ipv4_address": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}",
            "has_carrier": True,
            **fields,
        }
        for i in range(count)
    ]


def ipa(**inventory):
    """The real payload with parts of its inventory replaced (its NIC made PXE_MAC)."""
    payload = copy.deepcopy(IPA)
    payload["inventory"]["interfaces"][0]["mac_address"] = PXE_MAC
    payload["inventory"].update(inventory)
    return payload


@pytest.fixture
def node(client, ironic, store):
    return waiting_node(client, ironic, store, {"mac": [PXE_MAC]})


@pytest.fixture
def logs_dir(conf, tmp_path):
    """Ramdisk logs stored for every accepted post: none may appear for a refused one."""
    path = tmp_path / "ramdisk-logs"
    conf.set_override("ramdisk_logs_dir", str(path), group="processing")
    conf.set_override("always_store_ramdisk_logs", True, group="processing")
    return path


def post(client, payload):
    return client.post("/v1/continue", json=dict(payload, logs=base64.b64encode(b"x").decode()))


def assert_refused(response, node, store, queue, logs_dir, *fragments):
    """A 400 saying `fragments`, and nothing stored, enqueued or written for the node."""
    assert response.status_code == 400, response.json
    message = response.json["error"]["message"]
    for fragment in fragments:
        assert fragment in message, message
    assert store.get_data(node.uuid, processed=False) is None
    assert queue.events() == [(node.uuid, "inspect")]  # only the start's
    assert store.get_node(node.uuid).state == State.WAITING
    assert not logs_dir.exists() or not list(logs_dir.iterdir())
    return message


def assert_accepted(response, node, store, queue):
    assert response.status_code == 200, response.json
    assert response.json == {"uuid": node.uuid}
    assert store.get_data(node.uuid, processed=False) is not None
    assert queue.events()[-1] == (node.uuid, "continue")


# ------------------------------------------------------------------ limits (defaults)

#: (option, its default, the payload of `count` items, the field the 400 names, what).
LIMITS = [
    (
        "max_interfaces",
        256,
        lambda count: ipa(interfaces=interfaces(count)),
        "inventory.interfaces has {count} interfaces",
    ),
    (
        "max_interfaces",
        256,
        lambda count: dict(ipa(), macs=[mac(i) for i in range(count)]),
        "macs has {count} MACs",
    ),
    (
        "max_interfaces",
        256,
        lambda count: dict(ipa(), lldp_raw={f"eth{i}": [TLV] for i in range(count)}),
        "lldp_raw has {count} interfaces",
    ),
    (
        "max_disks",
        256,
        lambda count: ipa(disks=[{"name": f"/dev/sd{i}", "size": 2**40} for i in range(count)]),
        "inventory.disks has {count} disks",
    ),
    (
        "max_pci_devices",
        1024,
        lambda count: dict(
            ipa(), pci_devices=[{"vendor_id": "8086", "product_id": "1521"}] * count
        ),
        "pci_devices has {count} PCI devices",
    ),
    (
        "max_lldp_tlvs",
        256,
        lambda count: ipa(interfaces=[*interfaces(1), *interfaces(2, lldp=[TLV] * count)[1:]]),
        "inventory.interfaces[1].lldp has {count} TLVs",
    ),
    (
        "max_lldp_tlvs",
        256,
        lambda count: dict(ipa(), lldp_raw={"eth0": [TLV] * count}),
        "lldp_raw.eth0 has {count} TLVs",
    ),
]


@pytest.mark.parametrize(
    ("option", "default", "build", "said"), LIMITS, ids=[f"{o}-{s[:10]}" for o, _, _, s in LIMITS]
)
def test_a_count_at_its_limit_passes_one_more_is_a_400_naming_it(
    client, conf, node, store, queue, logs_dir, option, default, build, said
):
    assert getattr(conf.limits, option) == default
    message = assert_refused(
        post(client, build(default + 1)),
        node,
        store,
        queue,
        logs_dir,
        said.format(count=default + 1),
        f"more than [limits] {option} = {default}",
    )
    assert message.startswith("Ramdisk data over a limit: ")
    assert_accepted(post(client, build(default)), node, store, queue)


def test_a_tlv_value_of_511_octets_passes_512_is_a_400(client, conf, node, store, queue, logs_dir):
    assert conf.limits.max_lldp_tlv_size == 511  # the 9-bit length field of 802.1AB

    def payload(octets):
        nics = interfaces(3)
        nics[2]["lldp"] = [TLV, TLV, [127, "ab" * octets]]
        return ipa(interfaces=nics)

    assert_refused(
        post(client, payload(512)),
        node,
        store,
        queue,
        logs_dir,
        "inventory.interfaces[2].lldp[2] has a value of 512 octets",
        "more than [limits] max_lldp_tlv_size = 511",
    )
    assert_accepted(post(client, payload(511)), node, store, queue)


def test_the_limits_are_the_options(client, conf, node, store, queue, logs_dir):
    conf.set_override("max_interfaces", 3, group="limits")
    assert_refused(
        post(client, ipa(interfaces=interfaces(4))),
        node,
        store,
        queue,
        logs_dir,
        "inventory.interfaces has 4 interfaces, more than [limits] max_interfaces = 3",
    )
    assert_accepted(post(client, ipa(interfaces=interfaces(3))), node, store, queue)


def test_fifty_thousand_nics_are_a_400_before_any_lookup(
    client, node, store, queue, logs_dir, caplog
):
    payload = ipa(interfaces=interfaces(50_000))
    payload.pop("boot_interface", None)
    message = assert_refused(
        post(client, payload),
        node,
        store,
        queue,
        logs_dir,
        "inventory.interfaces has 50000 interfaces, more than [limits] max_interfaces = 256",
    )
    # The operator reads why in the API's log: the introspection will time out.
    # Only the API's own line: a library thread of an earlier test may still log its
    # "Connection refused" here.
    [record] = [
        r
        for r in caplog.records
        if r.name == "inspector.api.ramdisk" and "refused" in r.getMessage()
    ]
    assert record.levelno == logging.WARNING
    assert message in record.getMessage()


def test_a_limit_is_checked_before_discovery(client, conf, store, queue):
    conf.set_override("node_not_found_hook", "enroll", group="processing")
    response = client.post("/v1/continue", json=ipa(interfaces=interfaces(257)))
    assert response.status_code == 400
    assert "max_interfaces" in response.json["error"]["message"]
    assert queue.events() == []


# ------------------------------------------------------------------ types

WRONG_TYPES = [
    ("disks an object", {"inventory": {"disks": {"sda": {}}}}, "inventory.disks must be a list"),
    ("disk null", {"inventory": {"disks": [None]}}, "inventory.disks[0] must be an object"),
    ("disk a list", {"inventory": {"disks": [[]]}}, "inventory.disks[0] must be an object"),
    ("disk name", {"inventory": {"disks": [{"name": ["sda"]}]}}, "inventory.disks[0].name"),
    ("disk serial", {"inventory": {"disks": [{"serial": {}}]}}, "inventory.disks[0].serial"),
    ("boot a list", {"inventory": {"boot": []}}, "inventory.boot must be an object or null"),
    ("boot pxe_interface", {"inventory": {"boot": {"pxe_interface": 1}}}, "boot.pxe_interface"),
    ("interfaces an object", {"inventory": {"interfaces": {}}}, "inventory.interfaces must be"),
    ("interface a string", {"inventory": {"interfaces": ["eth0"]}}, "inventory.interfaces[0]"),
    ("lldp a string", {"interface": {"lldp": "0104"}}, "inventory.interfaces[0].lldp must be"),
    ("lldp an object", {"interface": {"lldp": {"1": "04"}}}, "inventory.interfaces[0].lldp"),
    ("TLV not a pair", {"interface": {"lldp": ["0104"]}}, "inventory.interfaces[0].lldp[0]"),
    ("interface name", {"interface": {"name": ["eth0"]}}, "inventory.interfaces[0].name"),
    ("client_id", {"interface": {"client_id": {}}}, "inventory.interfaces[0].client_id"),
    ("ipv4_address", {"interface": {"ipv4_address": 10}}, "inventory.interfaces[0].ipv4_address"),
    ("cpu a list", {"inventory": {"cpu": []}}, "inventory.cpu must be an object or null"),
    ("cpu flags", {"inventory": {"cpu": {"flags": "sse2"}}}, "inventory.cpu.flags must be"),
    ("cpu flag", {"inventory": {"cpu": {"flags": [{}]}}}, "inventory.cpu.flags[0] must be a str"),
    ("memory", {"inventory": {"memory": []}}, "inventory.memory must be an object or null"),
    ("bmc_address", {"inventory": {"bmc_address": []}}, "inventory.bmc_address must be"),
    ("pci_devices", {"pci_devices": {}}, "pci_devices must be a list or null"),
    ("pci device", {"pci_devices": [None]}, "pci_devices[0] must be an object"),
    ("pci vendor", {"pci_devices": [{"vendor_id": []}]}, "pci_devices[0].vendor_id"),
    ("lldp_raw", {"lldp_raw": []}, "lldp_raw must be an object or null"),
    ("macs", {"macs": "52:54:00:00:00:01"}, "macs must be a list or null"),
    ("root_disk", {"root_disk": []}, "root_disk must be an object or null"),
    ("extra hardware", {"data": "x"}, "data must be a list or null"),
    ("boot_interface", {"boot_interface": 1}, "boot_interface must be a string or null"),
]


def wrongly_typed(change):
    payload = ipa()
    for key, value in change.items():
        if key == "inventory":
            payload["inventory"].update(value)
        elif key == "interface":
            payload["inventory"]["interfaces"][0].update(value)
        else:
            payload[key] = value
    return payload


@pytest.mark.parametrize(
    ("change", "said"), [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES]
)
def test_a_wrong_type_is_a_400_naming_the_field(client, node, store, queue, logs_dir, change, said):
    message = assert_refused(
        post(client, wrongly_typed(change)), node, store, queue, logs_dir, said
    )
    assert message.startswith("Invalid ramdisk data: ")
    assert "Error" not in message  # no AttributeError/TypeError text


@pytest.mark.parametrize(
    "change",
    [
        {"inventory": {"disks": None, "boot": None, "cpu": None, "memory": None}},
        {"inventory": {"disks": [{"name": None, "serial": None, "size": "1", "x": [1]}]}},
        {"interface": {"lldp": None, "client_id": None, "ipv6_address": None}},
        {"interface": {"lldp": [[1, "04"], [127, "0080c2010064"]], "extra_field": {"a": 1}}},
        {"pci_devices": None, "lldp_raw": {"eth0": [TLV]}, "macs": [PXE_MAC], "data": [[]]},
        {"usb_devices": {"any": "shape"}, "numa_topology": [], "unknown": 1},
    ],
    ids=["nulls", "disk-nulls-and-extras", "interface-nulls", "lldp", "top-level", "unknown"],
)
def test_nulls_and_unknown_fields_stay_allowed(client, node, store, queue, change):
    assert_accepted(post(client, wrongly_typed(change)), node, store, queue)


@pytest.mark.parametrize(
    "path",
    [fixtures.IPA, fixtures.LARGE_SERVER, fixtures.FOUR_NIC, fixtures.APIREF],
    ids=lambda p: p.name,
)
def test_every_real_payload_is_accepted(client, ironic, store, queue, path):
    payload = fixtures.load(path)
    node = waiting_node(client, ironic, store, {"mac": macs(payload)})
    assert_accepted(client.post("/v1/continue", json=payload), node, store, queue)
