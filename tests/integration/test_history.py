"""Two introspections of one node through the real API, worker, PostgreSQL, RabbitMQ and
Ironic, with the large real-format payload: the history lists both, the drift has exactly
the three changes made (a disk replaced, a NIC added, the BIOS updated), a rule from
docs/processing.md sets its trait in Ironic, the fleet report counts the node as changed,
and the drift notification is sent."""

import copy

import pytest
import requests

from tests import fixtures
from tests.integration.cluster import (
    ipa_payload,
    macs,
    post_continue,
    running_deployment,
    start,
    wait_for,
    wait_state,
)

pytestmark = pytest.mark.integration

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
NEW_MAC = "52:54:00:aa:bb:09"
#: The example of docs/processing.md.
DISK_RULE = {
    "description": "flag nodes whose disks changed",
    "conditions": [{"op": "gt", "field": "drift.summary.disks", "value": 0}],
    "actions": [{"action": "add-trait", "name": "CUSTOM_HARDWARE_CHANGED"}],
}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, postgresql_admin, rabbitmq_server, redis_server, ironic_url):
    with running_deployment(
        tmp_path_factory.mktemp("history"),
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        options={"notifications": {"drivers": ["log"], "poll_interval": 0.2}},
    ) as cluster:
        yield cluster


def changed(payload: dict) -> dict:
    new = copy.deepcopy(payload)
    inventory = new["inventory"]
    inventory["disks"][1]["serial"] = "REPLACED-1"
    inventory["disks"][1]["wwn"] = "0x5000c500000000ff"
    inventory["interfaces"].append(
        dict(inventory["interfaces"][0], name="eno9", mac_address=NEW_MAC)
    )
    inventory["system_vendor"]["firmware"]["version"] = "1.2.4"
    return new


def introspect(deployment, ironic_api, node: str, payload: dict) -> None:
    start(deployment, node)
    answer = post_continue(deployment, payload)
    assert answer.status_code == 200, answer.text
    wait_state(deployment, node, "finished")


def test_two_introspections_make_a_history_and_a_drift(deployment, ironic_api):
    rule = requests.post(f"{deployment.url}/v1/rules", json=DISK_RULE, timeout=10)
    assert rule.status_code == 201, rule.text
    node = ironic_api.enroll()["uuid"]
    first = ipa_payload(macs(ironic_api, node), fixtures.LARGE_SERVER)
    introspect(deployment, ironic_api, node, first)
    traits = ironic_api.request("GET", f"/nodes/{node}/traits")["traits"]
    assert "CUSTOM_HARDWARE_CHANGED" not in traits  # a first introspection has no drift
    introspect(deployment, ironic_api, node, changed(first))

    url = f"{deployment.url}/v1/introspection/{node}"
    history = requests.get(f"{url}/history", headers=V19, timeout=10).json()["history"]
    assert [entry["state"] for entry in history] == ["finished", "finished"]
    drift = requests.get(f"{url}/drift", headers=V19, timeout=10).json()
    assert (drift["from"], drift["to"]) == (history[1]["id"], history[0]["id"])
    assert [(c["path"], c["kind"]) for c in drift["changes"]] == [
        ("firmware.version", "changed"),
        (f"disks[{first['inventory']['disks'][1]['name']}]", "changed"),
        (f"nics[{NEW_MAC}]", "added"),
    ]
    processed = requests.get(f"{url}/data", headers=V19, timeout=10).json()
    assert processed["drift"]["base"] == history[1]["id"]
    # At ironic-inspector's versions the processed data is as ironic-inspector's was.
    assert "drift" not in requests.get(f"{url}/data", timeout=10).json()
    assert processed["drift"]["changes"] == drift["changes"]
    older = requests.get(f"{url}/history/{history[1]['id']}/data", headers=V19, timeout=10)
    assert older.json()["drift"]["base"] is None and older.json()["drift"]["changes"] == []
    traits = ironic_api.request("GET", f"/nodes/{node}/traits")["traits"]
    assert "CUSTOM_HARDWARE_CHANGED" in traits
    # The fleet report counts the node as changed at its last introspection, in the group
    # of its new BIOS.
    report = requests.get(
        f"{deployment.url}/v1/report/hardware?by=firmware&nodes=true", headers=V19, timeout=10
    ).json()
    [group] = [g for g in report["groups"] if g["key"]["version"] == "1.2.4"]
    assert group["changed"] == 1 and group["nodes"] == 1, group
    wait_for(
        lambda: any(
            "Notification baremetal_introspection.drift" in process.log_text()
            for process in deployment.processes
        ),
        timeout=20,
        message=lambda: f"no drift notification:\n{deployment.logs()}",
    )
