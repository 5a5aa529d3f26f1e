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
    sys.exit(f"quickstart: demo: FAILED: {what} did not happen within {deadline:.0f} s")


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


def say(text):
    print(f"quickstart: demo: {text}", flush=True)


def walk(inspector, ironic):
    """The walk-through, one line per step; the exit status: 0 when the introspection
    finished and Ironic holds the node's properties."""
    enrolled = [enroll(ironic) for _ in range(3)]
    node, mac = enrolled[0]
    others = ", ".join(sample["name"] for sample, _ in enrolled[1:])
    say(f"1. enrolled {node['name']} ({node['uuid']}, port {mac}) and {others} in Ironic")
    answer = requests.post(f"{inspector}/v1/introspection/{node['uuid']}", timeout=10)
    say(
        f"2. started its introspection: POST /v1/introspection/{node['uuid']} "
        f"-> {answer.status_code}"
    )
    answer.raise_for_status()
    wait(
        "the node waiting for its ramdisk",
        lambda: status(inspector, node["uuid"])["state"] == "waiting",
    )
    power = requests.get(f"{ironic}/v1/nodes/{node['uuid']}", headers=IRONIC_HEADERS, timeout=10)
    say(f"3. Inspector set PXE boot and powered it on: Ironic says {power.json()['power_state']!r}")
    payload = json.loads(PAYLOAD.read_text())
    for interface in payload["inventory"]["interfaces"]:
        interface["mac_address"] = mac
    answer = requests.post(f"{inspector}/v1/continue", json=payload, timeout=10)
    say(f"4. its 'ramdisk' posted the inventory: POST /v1/continue -> {answer.status_code}")
    answer.raise_for_status()
    final = wait(
        "the introspection finishing",
        lambda: (s := status(inspector, node["uuid"]))["finished"] and s,
    )
    say(f"5. introspection {final['state']} (error: {final['error']})")
    written = requests.get(
        f"{ironic}/v1/nodes/{node['uuid']}", headers=IRONIC_HEADERS, timeout=10
    ).json()
    properties = written["properties"]
    wanted = {"cpus", "memory_mb", "cpu_arch", "local_gb"}
    say(
        f"6. Ironic now holds its properties {json.dumps(properties, sort_keys=True)}, "
        f"power {written['power_state']!r}"
    )
    missing = sorted(wanted - set(properties))
    if missing:
        say(f"FAILED: Ironic's node has no {', '.join(missing)} in its properties")
        return 1
    return 0 if final["state"] == "finished" else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspector", default="http://127.0.0.1:5050")
    parser.add_argument("--ironic", default="http://127.0.0.1:6385")
    args = parser.parse_args()
    try:
        return walk(args.inspector.rstrip("/"), args.ironic.rstrip("/"))
    except requests.RequestException as exc:
        say(f"FAILED: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
