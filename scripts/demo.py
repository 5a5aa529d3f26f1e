"""The quickstart's walk-through: enroll a node in the local Ironic, introspect it through
Inspector's API, play its ramdisk (post a real ironic-python-agent payload with the node's
MAC), and show the introspection finish; then delete the nodes it enrolled from Ironic.
Talks to 127.0.0.1 only; bounded in time. Exit status 0 when every step did what it says.

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


class Failed(Exception):
    """A step did not do what it says: the walk-through fails with this message."""


def wait(what, check, deadline=None, seen=None):
    """check()'s first true result; Failed after the deadline (DEADLINE seconds), naming
    what did not happen and, when given, what seen() then returns."""
    deadline = DEADLINE if deadline is None else deadline
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        result = check()
        if result:
            return result
        time.sleep(0.2)  # polling with a deadline
    last = f" ({seen()})" if seen is not None else ""
    raise Failed(f"{what} did not happen within {deadline:.0f} s{last}")


def node(ironic, node_uuid):
    return requests.get(f"{ironic}/v1/nodes/{node_uuid}", headers=IRONIC_HEADERS, timeout=10).json()


def enroll(ironic, created):
    """A manageable fake-hardware node with one PXE port (its uuid appended to created
    as soon as Ironic has it, to be deleted at the end)."""
    name = f"demo-{uuid.uuid4().hex[:8]}"
    answer = requests.post(
        f"{ironic}/v1/nodes",
        json={"name": name, "driver": "fake-hardware"},
        headers=IRONIC_HEADERS,
        timeout=10,
    )
    answer.raise_for_status()
    enrolled = answer.json()
    created.append(enrolled["uuid"])
    mac = "02:" + ":".join(uuid.uuid4().hex[i : i + 2] for i in range(0, 10, 2))
    requests.post(
        f"{ironic}/v1/ports",
        json={"node_uuid": enrolled["uuid"], "address": mac, "pxe_enabled": True},
        headers=IRONIC_HEADERS,
        timeout=10,
    ).raise_for_status()
    requests.put(
        f"{ironic}/v1/nodes/{enrolled['uuid']}/states/provision",
        json={"target": "manage"},
        headers=IRONIC_HEADERS,
        timeout=10,
    ).raise_for_status()
    wait(
        f"{name} becoming manageable",
        lambda: node(ironic, enrolled["uuid"])["provision_state"] == "manageable",
        seen=lambda: f"provision state {node(ironic, enrolled['uuid'])['provision_state']!r}",
    )
    return enrolled, mac


def status(inspector, node_uuid):
    return requests.get(f"{inspector}/v1/introspection/{node_uuid}", timeout=10).json()


def say(text):
    print(f"quickstart: demo: {text}", flush=True)


def settled_power(ironic, node_uuid):
    """The node's power state once no power change is under way (Ironic's conductor
    applies one after its API accepted it)."""
    current = node(ironic, node_uuid)
    return current["target_power_state"] is None and current["power_state"]


def walk(inspector, ironic, created):
    """The walk-through, one line per step; the exit status: 0 when the introspection
    finished and Ironic holds the node's properties. Failed when a step did not do what
    it says. The uuids of the nodes it enrolled are appended to created."""
    enrolled = [enroll(ironic, created) for _ in range(3)]
    sample, mac = enrolled[0]
    others = ", ".join(other["name"] for other, _ in enrolled[1:])
    say(f"1. enrolled {sample['name']} ({sample['uuid']}, port {mac}) and {others} in Ironic")
    answer = requests.post(f"{inspector}/v1/introspection/{sample['uuid']}", timeout=10)
    say(
        f"2. started its introspection: POST /v1/introspection/{sample['uuid']} "
        f"-> {answer.status_code}"
    )
    answer.raise_for_status()
    wait(
        "the node waiting for its ramdisk",
        lambda: status(inspector, sample["uuid"])["state"] == "waiting",
        seen=lambda: f"Inspector says {status(inspector, sample['uuid'])['state']!r}",
    )
    # Inspector asks Ironic for PXE boot, then for power on; Ironic's conductor powers
    # the node on after its API accepted the request.
    wait(
        "Ironic powering the node on",
        lambda: settled_power(ironic, sample["uuid"]) == "power on",
        seen=lambda: f"Ironic says power {node(ironic, sample['uuid'])['power_state']!r}",
    )
    boot = requests.get(
        f"{ironic}/v1/nodes/{sample['uuid']}/management/boot_device",
        headers=IRONIC_HEADERS,
        timeout=10,
    )
    boot.raise_for_status()
    device = boot.json()["boot_device"]
    if device != "pxe":
        raise Failed(f"Ironic says the node boots from {device!r}, not from PXE")
    say(f"3. Inspector set PXE boot and powered it on: Ironic says 'power on', boot {device!r}")
    payload = json.loads(PAYLOAD.read_text())
    for interface in payload["inventory"]["interfaces"]:
        interface["mac_address"] = mac
    answer = requests.post(f"{inspector}/v1/continue", json=payload, timeout=10)
    say(f"4. its 'ramdisk' posted the inventory: POST /v1/continue -> {answer.status_code}")
    answer.raise_for_status()
    final = wait(
        "the introspection finishing",
        lambda: (s := status(inspector, sample["uuid"]))["finished"] and s,
        seen=lambda: f"Inspector says {status(inspector, sample['uuid'])['state']!r}",
    )
    say(f"5. introspection {final['state']} (error: {final['error']})")
    # Inspector powers the node off when processing is over.
    power = wait(
        "Ironic's power change settling",
        lambda: settled_power(ironic, sample["uuid"]),
        seen=lambda: f"Ironic says power {node(ironic, sample['uuid'])['power_state']!r}",
    )
    properties = node(ironic, sample["uuid"])["properties"]
    wanted = {"cpus", "memory_mb", "cpu_arch", "local_gb"}
    say(
        f"6. Ironic now holds its properties {json.dumps(properties, sort_keys=True)}, "
        f"power {power!r}"
    )
    missing = sorted(wanted - set(properties))
    if missing:
        say(f"FAILED: Ironic's node has no {', '.join(missing)} in its properties")
        return 1
    return 0 if final["state"] == "finished" else 1


def delete(ironic, created):
    """Delete the nodes the walk-through enrolled (a node a power change still locks is
    tried again); 0, or 1 when some are still there."""
    deleted, failed = 0, []
    for node_uuid in created:
        refusals = []

        def gone(node_uuid=node_uuid, refusals=refusals):
            answer = requests.delete(
                f"{ironic}/v1/nodes/{node_uuid}", headers=IRONIC_HEADERS, timeout=10
            )
            if answer.status_code == 409:  # locked by the conductor: again
                refusals.append(answer.text)
                return False
            if answer.status_code != 404:  # 404: already gone
                answer.raise_for_status()
            return True

        try:
            wait(f"deleting node {node_uuid}", gone, seen=lambda refusals=refusals: refusals[-1])
            deleted += 1
        except (Failed, requests.RequestException) as exc:
            failed.append(f"{node_uuid} ({exc})")
    if deleted:
        say(f"deleted the {deleted} node{'s' if deleted > 1 else ''} it enrolled from Ironic")
    if failed:
        say(f"FAILED: these nodes are still in Ironic: {', '.join(failed)}")
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspector", default="http://127.0.0.1:5050")
    parser.add_argument("--ironic", default="http://127.0.0.1:6385")
    args = parser.parse_args()
    ironic = args.ironic.rstrip("/")
    created = []
    try:
        result = walk(args.inspector.rstrip("/"), ironic, created)
    except (Failed, requests.RequestException) as exc:
        say(f"FAILED: {exc}")
        result = 1
    return delete(ironic, created) or result


if __name__ == "__main__":
    sys.exit(main())
