"""The quickstart's walk-through: enroll a node in the local Ironic, introspect it through
Inspector's API, play its ramdisk (post a real ironic-python-agent payload with the node's
MAC), and show the introspection finish. Talks to 127.0.0.1 only; bounded in time.

    .venv/bin/python scripts/demo.py --inspector http://127.0.0.1:5050 --ironic http://127.0.0.1:6385
"""

import argparse
import json
import pathlib
import sys
import time
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: A real ironic-python-agent payload (tests/fixtures/README.md says where it comes from).
PAYLOAD = ROOT / "tests" / "fixtures" / "ipa" / "ipa-thismachine.json"
IRONIC_HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}
DEADLINE = 60.0


def wait(what, check, deadline=DEADLINE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        result = check()
        if result:
            return result
        time.sleep(0.2)  # polling with a deadline
    sys.exit(f"demo: {what} did not happen within {deadline:.0f} s")


def enroll(ironic):
    name = f"demo-{uuid.uuid4().hex[:8]}"
    node = requests.post(
        f"{ironic}/v1/nodes",
        json={"name": name, "driver": "fake-hardware"},
        headers=IRONIC_HEADERS,
        timeout=10,
    ).json()
    mac = "02:" + ":".join(uuid.uuid4().hex[i : i + 2] for i in range(0, 10, 2))
    requests.post(
        f"{ironic}/v1/ports",
        json={"node_uuid": node["uuid"], "address": mac, "pxe_enabled": True},
        headers=IRONIC_HEADERS,
        timeout=10,
    ).raise_for_status()
    requests.put(
        f"{ironic}/v1/nodes/{node['uuid']}/states/provision",
        json={"target": "manage"},
        headers=IRONIC_HEADERS,
        timeout=10,
    ).raise_for_status()
    wait(
        "the node becoming manageable",
        lambda: (
            requests.get(
                f"{ironic}/v1/nodes/{node['uuid']}", headers=IRONIC_HEADERS, timeout=10
            ).json()["provision_state"]
            == "manageable"
        ),
    )
    return node, mac


def status(inspector, node_uuid):
    return requests.get(f"{inspector}/v1/introspection/{node_uuid}", timeout=10).json()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspector", default="http://127.0.0.1:5050")
    parser.add_argument("--ironic", default="http://127.0.0.1:6385")
    args = parser.parse_args()
    inspector, ironic = args.inspector.rstrip("/"), args.ironic.rstrip("/")

    enrolled = [enroll(ironic) for _ in range(3)]
    for sample, sample_mac in enrolled:
        print(f"1. enrolled node {sample['name']} ({sample['uuid']}), port {sample_mac}, in Ironic")
    node, mac = enrolled[0]
    print(f"   introspecting {node['name']}")
    answer = requests.post(f"{inspector}/v1/introspection/{node['uuid']}", timeout=10)
    print(f"2. POST /v1/introspection/{node['uuid']} -> {answer.status_code}")
    answer.raise_for_status()
    wait(
        "the node waiting for its ramdisk",
        lambda: status(inspector, node["uuid"])["state"] == "waiting",
    )
    power = requests.get(f"{ironic}/v1/nodes/{node['uuid']}", headers=IRONIC_HEADERS, timeout=10)
    print(
        f"3. Inspector set PXE boot and powered it on: Ironic says {power.json()['power_state']!r}"
    )
    payload = json.loads(PAYLOAD.read_text())
    for interface in payload["inventory"]["interfaces"]:
        interface["mac_address"] = mac
    answer = requests.post(f"{inspector}/v1/continue", json=payload, timeout=10)
    print(f"4. the 'ramdisk' posted its inventory: /v1/continue -> {answer.status_code}")
    final = wait(
        "the introspection finishing",
        lambda: (s := status(inspector, node["uuid"]))["finished"] and s,
    )
    print(f"5. introspection {final['state']}: {json.dumps(final, indent=2)}")
    written = requests.get(
        f"{ironic}/v1/nodes/{node['uuid']}", headers=IRONIC_HEADERS, timeout=10
    ).json()
    ports = requests.get(
        f"{ironic}/v1/ports/detail?node_uuid={node['uuid']}", headers=IRONIC_HEADERS, timeout=10
    ).json()["ports"]
    print("6. what Inspector wrote to Ironic:")
    print(f"   properties: {json.dumps(written['properties'], sort_keys=True)}")
    for port in ports:
        print(f"   port {port['address']} pxe_enabled={port['pxe_enabled']}")
    print(f"   power state: {written['power_state']}")
    return 0 if final["state"] == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
