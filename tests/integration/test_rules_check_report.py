"""The rules check and the fleet report against the real services, through the real API and
the real command: one `inspector all` process on PostgreSQL and the real Ironic introspects
nodes from real payloads of two kinds; the check says which rule matches and why, and
changes nothing in Ironic or in the store; the report groups the nodes as their payloads
say, from the API and as CSV and a PNG from `inspector report`."""

import json
import subprocess

import pytest
import requests

from tests import fixtures
from tests.integration.cluster import (
    INSPECTOR,
    ROOT,
    ipa_payload,
    macs,
    post_continue,
    start,
    status,
    wait_for,
)
from tests.integration.test_rule_patterns import inspector_all
from tests.unit.test_rules_check import MATCHING, NOT_MATCHING, WRONG_PATH

pytestmark = [pytest.mark.integration, pytest.mark.postgresql]

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
#: What a rule could have changed on an Ironic node.
WATCHED = ("properties", "extra", "driver_info", "instance_info", "driver")


def _introspect(process, ironic_api, fixture, nics: int) -> dict:
    node = ironic_api.enroll(macs=nics)
    start(process, node["uuid"])
    payload = ipa_payload(macs(ironic_api, node["uuid"]), fixture)
    assert post_continue(process, payload).status_code == 200
    return node


def _ironic_state(ironic_api, uuid: str) -> dict:
    node = ironic_api.get_node(uuid)
    traits = ironic_api.request("GET", f"/nodes/{uuid}/traits")["traits"]
    return {**{field: node.get(field) for field in WATCHED}, "traits": sorted(traits)}


def test_rules_check_and_fleet_report(tmp_path, ironic_url, ironic_api, postgresql_url):
    with inspector_all(tmp_path, ironic_url, postgresql_url) as process:
        large = _introspect(process, ironic_api, fixtures.LARGE_SERVER, nics=2)
        small = _introspect(process, ironic_api, fixtures.IPA, nics=1)
        for node in (large, small):
            wait_for(
                lambda node=node: status(process, node["uuid"])["finished"],
                timeout=30,
                message=process.logs,
            )
            assert status(process, node["uuid"])["state"] == "finished", process.logs()
        nodes = (large, small)
        before = {n["uuid"]: _ironic_state(ironic_api, n["uuid"]) for n in nodes}
        data = {
            n["uuid"]: requests.get(f"{process.url}/v1/introspection/{n['uuid']}/data", timeout=10)
            for n in nodes
        }
        assert all(answer.status_code == 200 for answer in data.values())

        answer = requests.post(
            f"{process.url}/v1/rules/check",
            json={
                "rules": [WRONG_PATH, NOT_MATCHING, MATCHING],
                "nodes": [large["name"], small["uuid"]],
            },
            headers=V19,
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        on_large, on_small = answer.json()["nodes"]
        assert on_large["uuid"] == large["uuid"] and on_small["name"] == small["name"]
        wrong, not_matching, matching = on_small["rules"]
        assert wrong["conditions"][0]["missing"] and not wrong["matched"]
        assert not_matching["conditions"][1]["found"] == [2] and not not_matching["matched"]
        assert matching["matched"]
        assert matching["actions"][0]["value"] == "AMD EPYC x2"
        assert matching["actions"][1]["value"] == small["name"]
        # The large server has 64 CPUs: the big-CPU rule matches it, the small-vm one not.
        assert on_large["rules"][1]["matched"]
        assert on_large["rules"][1]["conditions"][1]["found"] == [64]
        assert on_large["rules"][2]["conditions"][0]["found"] == [64]
        assert not on_large["rules"][2]["matched"]

        # Nothing changed: in Ironic, in the stored data, in the rules.
        assert {n["uuid"]: _ironic_state(ironic_api, n["uuid"]) for n in nodes} == before
        for uuid, earlier in data.items():
            now = requests.get(f"{process.url}/v1/introspection/{uuid}/data", timeout=10)
            assert now.json() == earlier.json()
        assert requests.get(f"{process.url}/v1/rules", timeout=10).json()["rules"] == []

        report = requests.get(
            f"{process.url}/v1/report/hardware",
            params={"by": "system", "nodes": "true"},
            headers=V19,
            timeout=10,
        ).json()
        groups = {g["label"]: g for g in report["groups"]}
        assert groups["Synthetic Inc. SYN-R650"]["members"] == [
            {"uuid": large["uuid"], "name": large["name"]}
        ]
        assert {"uuid": small["uuid"], "name": small["name"]} in groups["unknown"]["members"]

        config = str(tmp_path / "inspector.conf")
        image = tmp_path / "nics.png"
        done = _command(config, "report", "--by", "nics", "--csv", "--plot", str(image))
        assert "nics,0x8086 0x159b ice," in done.stdout
        assert image.read_bytes().startswith(b"\x89PNG")

        rules = tmp_path / "rules.json"
        rules.write_text(json.dumps([NOT_MATCHING, MATCHING]))
        done = _command(config, "rules", "check", str(rules), "--node", small["name"])
        assert "data://inventory.cpu.count ge 64: found 2 -> false" in done.stdout
        assert "Rule 'small vm': MATCHED" in done.stdout


def _command(config: str, *args: str) -> subprocess.CompletedProcess:
    """`inspector ARGS --config-file config`, which must succeed."""
    done = subprocess.run(
        [*INSPECTOR, *args, "--config-file", config],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done
