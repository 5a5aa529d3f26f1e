"""Ironic's own inspection kept as history: two built-in (agent) inspections of one node
in the real Ironic 39, the ramdisk's two payloads (the large real-format one, then the
same with a disk replaced, a NIC added and the BIOS updated) posted to
/v1/continue_inspection; the history task, run after each on PostgreSQL, keeps both and
finds exactly those three changes."""

import copy

import pytest

from inspector.ironic import Ironic
from inspector.periodic.ironic_history import IronicHistory
from inspector.store import Store, schema
from tests import fixtures
from tests.integration.cluster import ipa_payload, macs
from tests.integration.ironic_lab import CONTINUE_INSPECTION_VERSION
from tests.integration.test_ironic_client import make_conf
from tests.unit.test_periodic import leadership

pytestmark = pytest.mark.integration

NEW_MAC = "52:54:00:aa:bb:09"


def inspect(api, node: str, payload: dict) -> None:
    """One built-in inspection of the node, the ramdisk's post made by the test."""
    api.request("PUT", f"/nodes/{node}/states/provision", {"target": "inspect"})
    api.wait_for(node, lambda n: n["provision_state"] == "inspect wait")
    answer = api.session.post(
        f"{api.url}/v1/continue_inspection",
        json=payload,
        headers={"X-OpenStack-Ironic-API-Version": CONTINUE_INSPECTION_VERSION},
        timeout=30,
    )
    assert answer.status_code == 202, answer.text
    api.wait_for(node, lambda n: n["provision_state"] == "manageable")


def test_two_ironic_inspections_are_kept_with_their_drift(
    ironic_api, ironic_url, postgresql_url, tmp_path
):
    schema.upgrade(postgresql_url)
    store = Store.from_url(postgresql_url)
    task = IronicHistory(store, Ironic(make_conf(ironic_url, tmp_path)))
    node = ironic_api.enroll(inspect_interface="agent")["uuid"]
    first = ipa_payload(macs(ironic_api, node), fixtures.LARGE_SERVER)
    # Ironic's validate-interfaces hook finds the PXE NIC by this one.
    first["inventory"]["boot"]["pxe_interface"] = first["inventory"]["interfaces"][0]["mac_address"]
    second = copy.deepcopy(first)
    inventory = second["inventory"]
    inventory["disks"][1]["serial"] = "REPLACED-1"
    inventory["disks"][1]["wwn"] = "0x5000c500000000ff"
    inventory["interfaces"].append(
        dict(inventory["interfaces"][0], name="eno9", mac_address=NEW_MAC)
    )
    inventory["system_vendor"]["firmware"]["version"] = "1.2.4"
    try:
        inspect(ironic_api, node, first)
        task.run(leadership(store))
        inspect(ironic_api, node, second)
        task.run(leadership(store))
        history = store.history_page(node, limit=10)
        assert [(e.source, e.state) for e in history] == [("ironic", "finished")] * 2
        drift = store.history_data(node, history[0].id)[1]["processed"]["drift"]
        assert drift["base"] == history[1].id
        assert [(c["path"], c["kind"]) for c in drift["changes"]] == [
            ("firmware.version", "changed"),
            (f"disks[{first['inventory']['disks'][1]['name']}]", "changed"),
            (f"nics[{NEW_MAC}]", "added"),
        ]
        # A run with nothing new keeps nothing and reads no inventory.
        assert task.run(leadership(store)).startswith("0 Ironic inspections kept")
    finally:
        store.close()
        if ironic_api.get_node(node)["provision_state"] == "inspect failed":  # deletable
            ironic_api.request("PUT", f"/nodes/{node}/states/provision", {"target": "manage"})
            ironic_api.wait_for(node, lambda n: n["provision_state"] == "manageable")
