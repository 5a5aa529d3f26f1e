"""The transition tasks against the in-repo fake Ironic and a real (SQLite) store."""

import copy
import dataclasses
import datetime

import pytest

from inspector.broker.message import Request
from inspector.coordination import LocalCoordinator
from inspector.machine import Event, Machine, State
from inspector.store import NodeRecord
from inspector.worker.handler import Handler
from inspector.worker.tasks import NoTasks, Tasks
from tests import fixtures, seed
from tests.fakes.ironic import FakeIronic
from tests.unit.conftest import RecordingQueue
from tests.unit.test_handler import FakeDelivery


@pytest.fixture
def ironic():
    return FakeIronic()


def record(uuid, manage_boot=True):
    now = datetime.datetime(2026, 11, 22)
    return NodeRecord(uuid, "starting", 1, now, None, None, manage_boot, now)


def started(store, uuid, manage_boot=True):
    seed.node(store, uuid, "starting", manage_boot=manage_boot)
    return record(uuid, manage_boot)


def run(tasks, node, event=Event.INSPECT, source=None):
    """Run the task of `event`'s transition; the follow-up the table gives it then."""
    transition = Machine().advance(source, event)
    tasks.run(node, Request(node_uuid=node.uuid, event=event), transition)
    return [transition.follow_up] if transition.follow_up else []


def test_start_records_lookup_attributes_and_boots(store, ironic, conf):
    node = ironic.add_node(driver_info={"ipmi_address": "192.0.2.7"}, power_state="power off")
    ironic.add_port(node.uuid, "52:54:00:aa:bb:01")
    ironic.add_port(node.uuid, "52:54:00:aa:bb:02")
    follow_ups = run(Tasks(store, ironic, conf), started(store, node.uuid))
    assert follow_ups == [Event.WAIT]
    assert store.attributes(node.uuid) == {
        "bmc_address": ["192.0.2.7"],
        "mac": ["52:54:00:aa:bb:01", "52:54:00:aa:bb:02"],
    }
    assert ironic.boot_devices[node.uuid] == ("pxe", False)
    assert [c.args for c in ironic.calls_to("set_power_state")] == [(node.uuid, "power on")]


def test_start_reboots_a_powered_node(store, ironic, conf):
    node = ironic.add_node(power_state="power on")
    run(Tasks(store, ironic, conf), started(store, node.uuid))
    assert [c.args[1] for c in ironic.calls_to("set_power_state")] == ["rebooting"]


def test_unmanaged_boot_only_records_attributes(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, "52:54:00:aa:bb:03")
    run(Tasks(store, ironic, conf), started(store, node.uuid, manage_boot=False))
    assert store.attributes(node.uuid) == {"mac": ["52:54:00:aa:bb:03"]}
    assert ironic.calls_to("set_power_state") == []
    assert ironic.calls_to("set_boot_device") == []


def test_start_is_idempotent(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, "52:54:00:aa:bb:04")
    tasks = Tasks(store, ironic, conf)
    recorded = started(store, node.uuid)
    run(tasks, recorded)
    run(tasks, recorded)
    assert store.attributes(node.uuid) == {"mac": ["52:54:00:aa:bb:04"]}


def test_follow_ups_of_each_target(store, ironic):
    tasks = NoTasks()
    assert run(tasks, record("n"), Event.CONTINUE, State.WAITING) == [Event.FINISH]
    assert run(tasks, record("n"), Event.FINISH, State.PROCESSING) == []
    assert run(tasks, record("n"), Event.ABORT, State.WAITING) == []


IPA = fixtures.load(fixtures.IPA)


def test_process_runs_hooks_stores_data_and_powers_off(store, ironic, conf):
    conf.set_override("store_data", "database", group="processing")
    node = ironic.add_node(power_state="power on")
    mac = IPA["inventory"]["interfaces"][0]["mac_address"]
    ironic.add_port(node.uuid, mac)
    recorded = started(store, node.uuid)
    store.store_data(node.uuid, IPA, processed=False)
    follow_ups = run(Tasks(store, ironic, conf), recorded, Event.CONTINUE, State.WAITING)
    assert follow_ups == [Event.FINISH]
    processed = store.get_data(node.uuid, processed=True)
    assert processed["inventory"] == IPA["inventory"]
    assert mac in processed["all_interfaces"][IPA["inventory"]["interfaces"][0]["name"]]["mac"]
    properties = ironic.nodes[node.uuid].properties
    assert properties["cpus"] == str(IPA["inventory"]["cpu"]["count"])  # as ironic-inspector
    assert properties["memory_mb"] == str(IPA["inventory"]["memory"]["physical_mb"])
    assert [c.args[1] for c in ironic.calls_to("set_power_state")] == ["power off"]
    assert len(ironic.calls_to("patch_node")) == 1  # one PATCH for every hook's changes


def test_process_applies_rules(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    store.create_rule(
        {
            "uuid": "6f8f2d2e-5d1c-4a51-9d0e-1f7f1f8a9b01",
            "conditions": [{"op": "ge", "field": "inventory.cpu.count", "value": 1}],
            "actions": [
                {"action": "set-capability", "name": "tested", "value": "yes"},
                {"action": "add-trait", "name": "CUSTOM_TESTED"},
            ],
        }
    )
    recorded = started(store, node.uuid)
    store.store_data(node.uuid, IPA, processed=False)
    run(Tasks(store, ironic, conf), recorded, Event.CONTINUE, State.WAITING)
    assert "tested:yes" in ironic.nodes[node.uuid].properties["capabilities"]
    assert ironic.traits[node.uuid] == {"CUSTOM_TESTED"}


def test_process_keeps_power_and_data_when_told(store, ironic, conf):
    conf.set_override("power_off", False, group="processing")
    node = ironic.add_node(power_state="power on")
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    recorded = started(store, node.uuid)
    store.store_data(node.uuid, IPA, processed=False)
    run(Tasks(store, ironic, conf), recorded, Event.CONTINUE, State.WAITING)
    assert store.get_data(node.uuid, processed=True) is None
    assert ironic.calls_to("set_power_state") == []


def test_process_without_data_fails(store, ironic, conf):
    node = ironic.add_node()
    with pytest.raises(Exception, match="no ramdisk data"):
        run(Tasks(store, ironic, conf), started(store, node.uuid), Event.CONTINUE, State.WAITING)


def test_reapply_leaves_power_alone(store, ironic, conf):
    node = ironic.add_node(power_state="power on")
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    recorded = started(store, node.uuid)
    store.store_data(node.uuid, IPA, processed=False)
    assert run(Tasks(store, ironic, conf), recorded, Event.REAPPLY, State.FINISHED) == [
        Event.FINISH
    ]
    assert ironic.calls_to("set_power_state") == []
    assert ironic.calls_to("patch_node")  # hooks and rules did run


def ironic_reads(ironic):
    return [c.name for c in ironic.history if c.name in ("get_node", "list_ports")]


def test_an_introspection_reads_the_node_and_its_ports_once(store, ironic, conf):
    """Processing goes on from what the start read: no second GET of node or ports."""
    node = ironic.add_node(power_state="power off", properties={"capabilities": "boot:uefi"})
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    tasks = Tasks(store, ironic, conf)
    recorded = started(store, node.uuid)
    run(tasks, recorded)
    assert ironic_reads(ironic) == ["get_node", "list_ports"]
    snapshot = store.snapshot(node.uuid)
    assert snapshot.node["uuid"] == node.uuid and len(snapshot.ports) == 1
    store.store_data(node.uuid, IPA, processed=False)
    run(tasks, recorded, Event.CONTINUE, State.WAITING)
    assert ironic_reads(ironic) == ["get_node", "list_ports"]
    # The snapshot's capabilities were merged with the hooks' into the one PATCH.
    capabilities = ironic.nodes[node.uuid].properties["capabilities"].split(",")
    assert "boot:uefi" in capabilities and len(capabilities) > 1
    assert len(ironic.calls_to("patch_node")) == 1


def test_start_uses_the_node_the_api_read(store, ironic, conf):
    node = ironic.add_node(driver_info={"ipmi_address": "192.0.2.9"}, power_state="power on")
    ironic.add_port(node.uuid, "52:54:00:aa:bb:09")
    recorded = started(store, node.uuid)
    store.save_snapshot(node.uuid, dataclasses.asdict(node), None)
    run(Tasks(store, ironic, conf), recorded)
    assert ironic_reads(ironic) == ["list_ports"]
    assert store.attributes(node.uuid)["bmc_address"] == ["192.0.2.9"]
    assert [c.args[1] for c in ironic.calls_to("set_power_state")] == ["rebooting"]
    assert len(store.snapshot(node.uuid).ports) == 1  # and now its ports, for processing


def test_a_snapshot_from_an_earlier_introspection_is_not_used(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    tasks = Tasks(store, ironic, conf)
    run(tasks, started(store, node.uuid))
    later = dataclasses.replace(
        record(node.uuid), started_at=store.snapshot(node.uuid).taken_at + datetime.timedelta(1)
    )
    store.store_data(node.uuid, IPA, processed=False)
    run(tasks, later, Event.CONTINUE, State.WAITING)
    assert ironic_reads(ironic) == ["get_node", "list_ports", "get_node", "list_ports"]


def test_a_snapshot_of_other_fields_is_not_used(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    recorded = started(store, node.uuid)
    store.save_snapshot(node.uuid, {"uuid": node.uuid, "from_the_future": 1}, [])
    store.store_data(node.uuid, IPA, processed=False)
    run(Tasks(store, ironic, conf), recorded, Event.CONTINUE, State.WAITING)
    assert ironic_reads(ironic) == ["get_node", "list_ports"]
    assert ironic.calls_to("patch_node")


def test_reapply_reads_ironic_afresh(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    tasks = Tasks(store, ironic, conf)
    recorded = started(store, node.uuid)
    run(tasks, recorded)
    store.store_data(node.uuid, IPA, processed=False)
    run(tasks, recorded, Event.REAPPLY, State.FINISHED)
    assert ironic_reads(ironic) == ["get_node", "list_ports", "get_node", "list_ports"]


def test_enroll_creates_the_node_in_ironic(store, ironic, conf):
    recorded = started(store, "6b0c4f49-2c1e-4a0f-9d74-0a3c0f4d5e61")
    payload = dict(IPA, inventory=dict(IPA["inventory"], bmc_address="192.0.2.20"))
    store.store_data(recorded.uuid, payload, processed=False)
    follow_ups = run(Tasks(store, ironic, conf), recorded, Event.ENROLL)
    assert follow_ups == [Event.CONTINUE]
    created = ironic.nodes[recorded.uuid]
    assert created.driver == conf.discovery.enroll_node_driver
    assert created.driver_info["ipmi_address"] == "192.0.2.20"
    assert store.attributes(recorded.uuid)["bmc_address"] == ["192.0.2.20"]


def test_enroll_refuses_a_mac_owned_by_another_node(store, ironic, conf):
    other = ironic.add_node()
    ironic.add_port(other.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    recorded = started(store, "0d7e5f8a-33b1-4c4e-8f0a-5b9d2c1e7f42")
    store.store_data(recorded.uuid, IPA, processed=False)
    with pytest.raises(Exception, match=f"already belongs to Ironic node {other.uuid}"):
        run(Tasks(store, ironic, conf), recorded, Event.ENROLL)
    assert recorded.uuid not in ironic.nodes


def test_enroll_refuses_a_bmc_address_another_node_has(store, ironic, conf):
    other = ironic.add_node(driver_info={"redfish_address": "https://192.0.2.20:8000/"})
    ironic.add_node(driver_info={"ipmi_address": "bmc.example.invalid"})  # never resolved
    recorded = started(store, "5e1f0a2b-6c3d-4e5f-8a9b-0c1d2e3f4a5b")
    payload = dict(IPA, inventory=dict(IPA["inventory"], bmc_address="192.0.2.20"))
    store.store_data(recorded.uuid, payload, processed=False)
    with pytest.raises(Exception, match=f"192.0.2.20 already belongs to Ironic node {other.uuid}"):
        run(Tasks(store, ironic, conf), recorded, Event.ENROLL)
    assert recorded.uuid not in ironic.nodes


def test_a_driver_change_by_rule_resets_interfaces_in_the_one_patch(store, ironic, conf):
    node = ironic.add_node()
    ironic.add_port(node.uuid, IPA["inventory"]["interfaces"][0]["mac_address"])
    store.create_rule(
        {
            "uuid": "3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a98",
            "conditions": [],
            "actions": [{"action": "set-attribute", "path": "/driver", "value": "ipmi"}],
        }
    )
    recorded = started(store, node.uuid)
    store.store_data(node.uuid, IPA, processed=False)
    run(Tasks(store, ironic, conf), recorded, Event.CONTINUE, State.WAITING)
    (patch_call,) = ironic.calls_to("patch_node")
    assert patch_call.kwargs["reset_interfaces"] is True
    assert {"op": "add", "path": "/driver", "value": "ipmi"} in patch_call.args[1]


# ------------------------------------------------------------------ bad data, port limit


def introspect(store, ironic, conf, data):
    """A whole introspection of a node of `ironic` through the worker's handler, with `data`
    stored as raw data as an older API (or a reapply) could have: the node's record."""
    node = ironic.add_node()
    ironic.add_port(node.uuid, PXE_MAC)
    handler = Handler(store, LocalCoordinator(), RecordingQueue(), Tasks(store, ironic, conf))
    handler.handle(FakeDelivery(Request(node_uuid=node.uuid, event=Event.INSPECT)))
    assert store.get_node(node.uuid).state == State.WAITING
    store.store_data(node.uuid, data, processed=False)
    delivery = FakeDelivery(Request(node_uuid=node.uuid, event=Event.CONTINUE))
    handler.handle(delivery)
    assert delivery.outcome == "ack"
    return store.get_node(node.uuid)


PXE_MAC = IPA["inventory"]["interfaces"][0]["mac_address"]


def with_inventory(**inventory):
    data = copy.deepcopy(IPA)
    data["inventory"].update(inventory)
    return data


BAD_TYPES = [
    ({"disks": {"sda": {}}}, "inventory.disks must be a list or null, not an object"),
    ({"disks": [None]}, "inventory.disks[0] must be an object, not null"),
    ({"disks": [["sda"]]}, "inventory.disks[0] must be an object, not a list"),
    ({"boot": ["uefi"]}, "inventory.boot must be an object or null, not a list"),
    ({"interfaces": {"eth0": {}}}, "inventory.interfaces must be a list, not an object"),
    (
        {"interfaces": [dict(IPA["inventory"]["interfaces"][0], lldp="0104")]},
        "inventory.interfaces[0].lldp must be a list or null, not a string",
    ),
]


@pytest.mark.parametrize(("inventory", "said"), BAD_TYPES, ids=[s for _, s in BAD_TYPES])
def test_stored_data_of_a_wrong_type_ends_in_error_naming_the_field(
    store, ironic, conf, inventory, said
):
    node = introspect(store, ironic, conf, with_inventory(**inventory))
    assert node.state == State.ERROR
    assert node.error == f"processing failed: Invalid ramdisk data: {said}"
    assert ironic.calls_to("patch_node") == [] and ironic.calls_to("create_port") == []


def test_stored_data_over_a_limit_ends_in_error_naming_it(store, ironic, conf):
    disks = [{"name": f"/dev/sd{i}", "size": 2**40} for i in range(257)]
    node = introspect(store, ironic, conf, with_inventory(disks=disks))
    assert node.state == State.ERROR
    assert node.error == (
        "processing failed: Ramdisk data over a limit: inventory.disks has 257 disks, "
        "more than [limits] max_disks = 256"
    )


def nics(count):
    """The known PXE NIC, then count - 1 NICs with fresh MACs and addresses."""
    first = IPA["inventory"]["interfaces"][0]
    return [first] + [
        dict(first, name=f"eth{i}", mac_address=f"52:54:01:00:{i >> 8:02x}:{i & 255:02x}")
        for i in range(1, count)
    ]


def test_no_boot_interface_and_more_nics_than_max_new_ports_creates_no_port(store, ironic, conf):
    # The black box: no boot_interface, so every NIC with an address gets a port.
    assert conf.limits.max_new_ports == 64
    data = with_inventory(interfaces=nics(66))
    data.pop("boot_interface", None)
    node = introspect(store, ironic, conf, data)
    assert node.state == State.ERROR
    assert node.error == (
        "processing failed: Processing would create 65 Ironic ports (the interfaces "
        "[processing] add_ports = pxe selects), more than [limits] max_new_ports = 64: "
        "nothing was changed in Ironic"
    )
    assert ironic.calls_to("create_port") == [] and ironic.calls_to("patch_node") == []
    assert len(ironic.ports) == 1


def test_as_many_new_ports_as_max_new_ports_are_created(store, ironic, conf):
    data = with_inventory(interfaces=nics(65))
    data.pop("boot_interface", None)
    node = introspect(store, ironic, conf, data)
    assert (node.state, node.error) == (State.FINISHED, None)
    assert len(ironic.calls_to("create_port")) == 64
    assert len(ironic.ports) == 65


def test_max_new_ports_counts_only_the_ports_the_hooks_select(store, ironic, conf):
    conf.set_override("max_new_ports", 1, group="limits")
    data = with_inventory(interfaces=nics(10))
    data["boot_interface"] = data["inventory"]["interfaces"][3]["mac_address"]
    node = introspect(store, ironic, conf, data)
    assert (node.state, node.error) == (State.FINISHED, None)
    [created] = ironic.calls_to("create_port")
    assert created.args[1] == data["boot_interface"]
