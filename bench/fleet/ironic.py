"""The fleet's own Ironic 39 (standalone, fake-hardware, SQLite) and its enrolled site:
started and stopped through scripts/services on a private directory and port, and N
nodes `fleet-NNNNN` with one port each, enrolled once and kept between runs.

Node i has the port MAC 52:54:XX:XX:XX:XX (i in the last four bytes) and the BMC
address 10.X.Y.Z (i in the last three bytes), in `driver_info[ipmi_address]`, so
both services can find it by MAC and by BMC address. Nodes are left `manageable`.
"""

import concurrent.futures
import dataclasses
import os
import pathlib
import subprocess
import time
from collections.abc import Iterator

import requests

from bench.fleet import procstat

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services"
HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}
PAGE = 1000
#: Seconds a node gets to reach `manageable` after `manage`.
MANAGE_TIMEOUT = 120.0


@dataclasses.dataclass(frozen=True)
class Node:
    index: int
    uuid: str
    name: str
    mac: str
    bmc: str


def node_name(index: int) -> str:
    return f"fleet-{index:05d}"


def node_mac(index: int) -> str:
    return "52:54:" + ":".join(f"{(index >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))


def node_bmc(index: int) -> str:
    return "10." + ".".join(str((index >> shift) & 0xFF) for shift in (16, 8, 0))


class FleetIronic:
    """A private Ironic under `directory` on `port` (scripts/services start/stop ironic)."""

    def __init__(self, directory: pathlib.Path, port: int) -> None:
        self.directory = directory
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.session = requests.Session()
        self.session.headers.update(HEADERS)

    def _services(self, action: str) -> None:
        environ = dict(os.environ, INSPECTOR_IRONIC_DIR=str(self.directory))
        environ["INSPECTOR_IRONIC_PORT"] = str(self.port)
        subprocess.run([str(SERVICES), action, "ironic"], check=True, env=environ)

    def start(self) -> "FleetIronic":
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        self._services("start")
        return self

    def stop(self) -> None:
        self.session.close()
        self._services("stop")

    def pids(self) -> list[int]:
        """Ironic's process group (the API and the worker it forks)."""
        return procstat.in_groups({int(pathlib.Path(f"{self.directory}.pid").read_text())})

    def _pages(self, path: str, fields: str) -> Iterator[dict]:
        url: str | None = f"{self.url}{path}?fields={fields}&limit={PAGE}"
        key = path.rsplit("/", 1)[-1]
        while url:
            reply = self.session.get(url, timeout=60)
            reply.raise_for_status()
            body = reply.json()
            yield from body[key]
            url = body.get("next")

    def site(self, count: int, threads: int = 4) -> tuple[list[Node], int]:
        """Nodes 0..count-1, enrolling (and managing) the missing ones; and how many
        nodes Ironic then holds, fleet's or not: the site its figures are for."""
        every = list(self._pages("/v1/nodes", "uuid,name,provision_state"))
        known = {n["name"]: n for n in every if (n.get("name") or "").startswith("fleet-")}
        ports = {port["address"] for port in self._pages("/v1/ports", "address")}
        missing = [i for i in range(count) if node_name(i) not in known]
        if missing:
            print(f"enrolling {len(missing)} nodes in the fleet's Ironic", flush=True)
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            created = dict(zip(missing, pool.map(self._create, missing), strict=True))
        for index, uuid in created.items():
            known[node_name(index)] = {"uuid": uuid, "provision_state": "enroll"}
        unported = [i for i in range(count) if node_mac(i) not in ports]
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda i: self._port(known[node_name(i)]["uuid"], i), unported))
        unmanaged = [
            known[node_name(i)]["uuid"]
            for i in range(count)
            if known[node_name(i)]["provision_state"] != "manageable"
        ]
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(self._manage, unmanaged))
        nodes = [
            Node(i, known[node_name(i)]["uuid"], node_name(i), node_mac(i), node_bmc(i))
            for i in range(count)
        ]
        return nodes, len(every) + len(created)

    def _create(self, index: int) -> str:
        reply = self.session.post(
            f"{self.url}/v1/nodes",
            json={
                "name": node_name(index),
                "driver": "fake-hardware",
                "driver_info": {"ipmi_address": node_bmc(index)},
            },
            timeout=60,
        )
        reply.raise_for_status()
        return reply.json()["uuid"]

    def _port(self, node_uuid: str, index: int) -> None:
        reply = self.session.post(
            f"{self.url}/v1/ports",
            json={"node_uuid": node_uuid, "address": node_mac(index), "pxe_enabled": True},
            timeout=60,
        )
        reply.raise_for_status()

    def _manage(self, node_uuid: str) -> None:
        state = self.session.get(f"{self.url}/v1/nodes/{node_uuid}", timeout=60).json()
        if state["provision_state"] == "manageable":
            return
        if state["provision_state"] == "enroll":
            self.session.put(
                f"{self.url}/v1/nodes/{node_uuid}/states/provision",
                json={"target": "manage"},
                timeout=60,
            ).raise_for_status()
        deadline = time.monotonic() + MANAGE_TIMEOUT
        while time.monotonic() < deadline:
            node = self.session.get(f"{self.url}/v1/nodes/{node_uuid}", timeout=60).json()
            if node["provision_state"] == "manageable" and not node.get("target_provision_state"):
                return
            time.sleep(0.2)  # polling Ironic's state with a deadline
        raise RuntimeError(f"node {node_uuid} not manageable after {MANAGE_TIMEOUT} s")
