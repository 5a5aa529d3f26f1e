"""Hardware drift between two introspections' data (the large real-format payload)."""

import copy
import json
import pathlib
import re
import time

import pytest

from inspector import conf as config
from inspector.processing import drift, rule_schema, rules
from inspector.processing.context import ProcessingContext, ProcessingError
from tests import fixtures
from tests.unit.test_rules import make_node

NEW_MAC = "52:54:00:aa:bb:09"


def changed_server() -> tuple[dict, dict]:
    """The large server, and the same with one disk replaced (new serial), one NIC
    added and the BIOS version changed."""
    old = fixtures.load(fixtures.LARGE_SERVER)
    new = copy.deepcopy(old)
    inventory = new["inventory"]
    inventory["disks"][1]["serial"] = "REPLACED-1"
    inventory["disks"][1]["wwn"] = "0x5000c500000000ff"
    nic = dict(inventory["interfaces"][0], name="eno9", mac_address=NEW_MAC)
    inventory["interfaces"].append(nic)
    inventory["system_vendor"]["firmware"]["version"] = "1.2.4"
    return old, new


def test_exactly_the_three_changes_and_nothing_else():
    old, new = changed_server()
    changes = drift.compare(old, new)
    assert [(c["path"], c["kind"]) for c in changes] == [
        ("firmware.version", "changed"),
        ("disks[/dev/sdb]", "changed"),
        (f"nics[{NEW_MAC}]", "added"),
    ]
    assert changes[0]["old"] == "1.2.3" and changes[0]["new"] == "1.2.4"
    assert changes[1]["old"]["serial"] == "SYN00000001"
    assert changes[1]["new"]["serial"] == "REPLACED-1"
    assert changes[2]["old"] is None and changes[2]["new"]["name"] == "eno9"
    summary = drift.summary(changes)
    assert summary == dict.fromkeys(drift.CATEGORIES, 0) | {"firmware": 1, "disks": 1, "nics": 1}


def test_a_first_introspection_has_no_drift():
    _old, new = changed_server()
    document = drift.document(None, None, new)
    assert document == {
        "base": None,
        "changes": [],
        "summary": dict.fromkeys(drift.CATEGORIES, 0),
    }


def test_the_same_data_has_no_drift_and_renamed_disks_are_the_same_disks():
    old = fixtures.load(fixtures.LARGE_SERVER)
    new = copy.deepcopy(old)
    new["inventory"]["disks"].reverse()
    first, second = new["inventory"]["disks"][0], new["inventory"]["disks"][1]
    first["name"], second["name"] = second["name"], first["name"]
    assert drift.compare(old, new) == []


def test_fields_of_matched_items_and_counts():
    old = fixtures.load(fixtures.FOUR_NIC)
    new = copy.deepcopy(old)
    new["inventory"]["disks"][0]["size"] += 1
    new["inventory"]["interfaces"][0]["driver"] = "other"
    new["inventory"]["interfaces"].pop()
    new["inventory"]["bmc_address"] = "192.0.2.99"
    new.setdefault("pci_devices", []).append({"vendor_id": "8086", "product_id": "1572"})
    paths = {(c["path"].split("[")[0].split(".")[0], c["kind"]) for c in drift.compare(old, new)}
    assert paths == {
        ("disks", "changed"),
        ("nics", "changed"),
        ("nics", "removed"),
        ("bmc", "changed"),
        ("pci", "added"),
    }


def test_lldp_neighbours_of_a_nic_are_compared():
    old = fixtures.load(fixtures.FOUR_NIC)
    nic = next(i for i in old["inventory"]["interfaces"] if i.get("lldp"))
    new = copy.deepcopy(old)
    moved = next(i for i in new["inventory"]["interfaces"] if i["name"] == nic["name"])
    moved["lldp"] = [[1, "04" + "112233445566"], [2, "05" + "45746830"]]
    (change,) = drift.compare(old, new)
    assert change["path"] == f"lldp[{nic['mac_address'].lower()}]"
    assert change["new"] == {"switch": "11:22:33:44:55:66", "port": "Eth0"}


def test_hostile_shapes_are_no_error():
    assert drift.compare({"inventory": "x", "pci_devices": 3}, {"inventory": {"disks": [1]}}) == []


def test_drift_costs_well_under_five_milliseconds_on_the_large_payload():
    old, new = changed_server()
    began = time.process_time()
    for _ in range(20):
        drift.compare(old, new)
    # A generous bound against a gross regression; bench/ measures it properly.
    assert (time.process_time() - began) / 20 < 0.005


def doc_rules() -> dict[str, dict]:
    """The drift rule examples of docs/processing.md, by description, as the API stores them."""
    text = (pathlib.Path(__file__).parents[2] / "docs" / "processing.md").read_text()
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.S)]
    return {
        rule["description"]: rule_schema.validate_rule(rule)
        for rule in blocks
        if "conditions" in rule and "drift." in json.dumps(rule)
    }


def drifted(change_serial: bool) -> ProcessingContext:
    old, new = changed_server()
    if change_serial:
        new["inventory"]["system_vendor"]["serial_number"] = "OTHER-BOARD"
    data = dict(new, drift=drift.document(1, old, new))
    return ProcessingContext(node=make_node(), ports=[], data=data, conf=config.load([]))


def test_the_documented_rules_act_on_the_drift():
    found = doc_rules()
    disks, serial = found["flag nodes whose disks changed"], found["refuse a changed motherboard"]
    context = drifted(change_serial=False)
    assert rules.evaluate([disks, serial], context) == [disks["uuid"]]
    assert "CUSTOM_HARDWARE_CHANGED" in context.changes.traits_add
    with pytest.raises(ProcessingError, match="System serial changed"):
        rules.evaluate([serial], drifted(change_serial=True))
