"""The PXE filter benchmark's own Ironic 39: built-in inspection (`agent` inspect
interface, fake hardware), versioned notifications to RabbitMQ, and its site of nodes.

scripts/services creates Ironic's configuration (notifications to the test RabbitMQ,
here on a topic of the benchmark's own, and unmanaged `agent` inspection: the nodes
PXE-boot from the dnsmasq the filters guard), database and virtualenv on a private
directory and port, and stops it; this module starts it again with a second
configuration file after the first (oslo.config: the later file wins) that turns the
power-state sync off (10,000 fake nodes would keep the shared 2 cores busy every
minute). ironic-pxe-filter reads the same files and one of its own ([pxe_filter]).

Nodes `pxe-NNNNN` each have one PXE port, MAC 52:55:XX:XX:XX:XX (the index in the last
four bytes), and are `manageable`. The first ones are enrolled through Ironic's API,
the rest copied in bulk in Ironic's SQLite database from the first (`seed`): a row per
node and per port in one transaction, as an operator's bulk import would leave them.
"""

import concurrent.futures
import dataclasses
import datetime
import os
import pathlib
import sqlite3
import subprocess
import threading
import time
import uuid as uuidlib

import requests

from bench.fleet import ironic as fleet_ironic
from bench.fleet import ramdisk

ROOT = fleet_ironic.ROOT
SERVICES = fleet_ironic.SERVICES
#: Ironic's API version: 1.84 brings /v1/continue_inspection.
HEADERS = {"X-OpenStack-Ironic-API-Version": "1.87"}
#: Seconds Ironic gets to answer after its start, and a node to reach a state.
READY_TIMEOUT = 90.0
STATE_TIMEOUT = 120.0


def node_name(index: int) -> str:
    return f"pxe-{index:05d}"


def node_mac(index: int) -> str:
    return "52:55:" + ":".join(f"{(index >> shift) & 0xFF:02x}" for shift in (24, 16, 8, 0))


@dataclasses.dataclass(frozen=True)
class Node:
    index: int
    uuid: str
    mac: str


def oslo_url(url: str) -> str:
    """oslo.messaging's spelling of a RabbitMQ URL (rabbit://, not kombu's amqp://)."""
    return "rabbit://" + url.split("://", 1)[1] if url.startswith("amqp://") else url


#: What the benchmark adds to scripts/services' Ironic configuration.
EXTRA_CONF = """[conductor]
sync_power_state_interval = -1
"""


class PxeIronic:
    """A private Ironic under `directory` on `port`, notifying on `topic` (on the
    RabbitMQ of `scripts/services env`)."""

    def __init__(self, directory: pathlib.Path, port: int, topic: str):
        self.directory = directory
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.topic = topic
        self.conf = directory / "ironic.conf"
        self.session = requests.Session()
        self.session.headers.update(HEADERS)
        self._pidfile = pathlib.Path(f"{directory}.pid")
        self._template = ramdisk.load_template()

    @property
    def venv(self) -> pathlib.Path:
        return ROOT / ".services" / "ironic-venv"

    @property
    def database(self) -> pathlib.Path:
        return self.directory / "ironic.sqlite"

    def _services(self, action: str) -> None:
        environ = dict(os.environ, INSPECTOR_IRONIC_DIR=str(self.directory))
        environ["INSPECTOR_IRONIC_PORT"] = str(self.port)
        environ["INSPECTOR_IRONIC_NOTIFICATIONS_TOPIC"] = self.topic
        environ["INSPECTOR_IRONIC_NOTIFICATIONS"] = "yes"  # the filters follow them
        subprocess.run([str(SERVICES), action, "ironic"], check=True, env=environ)

    def configs(self) -> list[pathlib.Path]:
        """Ironic's configuration files: scripts/services' and the benchmark's."""
        return [self.conf, self.directory / "bench.conf"]

    def start(self) -> "PxeIronic":
        """scripts/services creates (or keeps) the configuration and the database and
        starts Ironic; it is stopped and started again with the benchmark's options."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        self._services("start")
        self._services("stop")
        extra = self.configs()[1]
        extra.write_text(EXTRA_CONF)
        log = (self.directory / "ironic.out").open("ab")
        process = subprocess.Popen(
            [str(self.venv / "bin" / "ironic")]
            + [arg for conf in self.configs() for arg in ("--config-file", str(conf))],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own group, which `scripts/services stop` signals
        )
        log.close()
        # Reaped as soon as it exits: `scripts/services stop` waits for the group to be gone.
        threading.Thread(target=process.wait, name="ironic-reaper", daemon=True).start()
        self._pidfile.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"ironic exited; see {self.directory}/ironic.log")
            try:
                if self.session.get(f"{self.url}/v1", timeout=2).ok:
                    return self
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"ironic not ready after {READY_TIMEOUT} s")
            time.sleep(0.2)  # polling Ironic's start with a deadline

    def stop(self) -> None:
        self.session.close()
        self._services("stop")

    def pids(self) -> list[int]:
        return fleet_ironic.procstat.in_groups({int(self._pidfile.read_text())})

    # ------------------------------------------------------------------ the site

    def count(self) -> tuple[int, int]:
        """(nodes, ports) in Ironic's database."""
        with sqlite3.connect(self.database) as db:
            nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
            ports = db.execute("SELECT count(*) FROM ports").fetchone()[0]
        return nodes, ports

    def enroll(self, count: int, threads: int = 4) -> list[Node]:
        """Nodes 0..count-1 through the API (the missing ones), `manageable`."""
        known = {}
        url: str | None = f"{self.url}/v1/nodes?fields=uuid,name&limit=1000"
        while url:
            body = self.session.get(url, timeout=60).json()
            known.update({n["name"]: n["uuid"] for n in body["nodes"]})
            url = body.get("next")
        missing = [i for i in range(count) if node_name(i) not in known]
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for index, node_uuid in zip(missing, pool.map(self._create, missing), strict=True):
                known[node_name(index)] = node_uuid
        return [Node(i, known[node_name(i)], node_mac(i)) for i in range(count)]

    def _create(self, index: int) -> str:
        reply = self.session.post(
            f"{self.url}/v1/nodes",
            json={"name": node_name(index), "driver": "fake-hardware"}
            | {"inspect_interface": "agent"},
            timeout=60,
        )
        reply.raise_for_status()
        node_uuid = reply.json()["uuid"]
        self.session.post(
            f"{self.url}/v1/ports",
            json={"node_uuid": node_uuid, "address": node_mac(index), "pxe_enabled": True},
            timeout=60,
        ).raise_for_status()
        self.provision(node_uuid, "manage")
        self.wait_state(node_uuid, {"manageable"})
        return node_uuid

    def seed(self, total: int) -> int:
        """Exactly `total` nodes: copies of node 0 (and its port) added, or the copies
        beyond `total` removed, in Ironic's database in one transaction; the change in
        the number of nodes."""
        with sqlite3.connect(self.database, timeout=60) as db:
            db.row_factory = sqlite3.Row
            first = (node_name(0),)
            node = dict(db.execute("SELECT * FROM nodes WHERE name = ?", first).fetchone())
            port = dict(
                db.execute("SELECT * FROM ports WHERE node_id = ?", (node["id"],)).fetchone()
            )
            extra = [
                row[0]
                for row in db.execute(
                    "SELECT id FROM nodes WHERE name LIKE 'pxe-%' AND name >= ?",
                    (node_name(total),),
                )
            ]
            db.executemany("DELETE FROM ports WHERE node_id = ?", [(i,) for i in extra])
            db.executemany("DELETE FROM nodes WHERE id = ?", [(i,) for i in extra])
            names = {row[0] for row in db.execute("SELECT name FROM nodes")}
            missing = [i for i in range(total) if node_name(i) not in names]
            for column in ("id", "uuid", "name"):
                node.pop(column)
            for column in ("id", "uuid", "address", "node_id"):
                port.pop(column)
            node_columns = ["uuid", "name", *node]
            port_columns = ["uuid", "address", "node_id", *port]
            for index in missing:
                cursor = db.execute(
                    f"INSERT INTO nodes ({', '.join(node_columns)}) "
                    f"VALUES ({', '.join('?' * len(node_columns))})",
                    [str(uuidlib.uuid4()), node_name(index), *node.values()],
                )
                db.execute(
                    f"INSERT INTO ports ({', '.join(port_columns)}) "
                    f"VALUES ({', '.join('?' * len(port_columns))})",
                    [str(uuidlib.uuid4()), node_mac(index), cursor.lastrowid, *port.values()],
                )
        return len(missing) - len(extra)

    # ------------------------------------------------------------------ inspection

    def provision(self, node_uuid: str, target: str) -> None:
        self.session.put(
            f"{self.url}/v1/nodes/{node_uuid}/states/provision",
            json={"target": target},
            timeout=60,
        ).raise_for_status()

    def state(self, node_uuid: str) -> dict:
        return self.session.get(
            f"{self.url}/v1/nodes/{node_uuid}?fields=provision_state,target_provision_state,last_error",
            timeout=60,
        ).json()

    def wait_state(self, node_uuid: str, states: set[str], timeout: float = STATE_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            node = self.state(node_uuid)
            waiting = node["provision_state"] == "inspect wait"  # its target stays set
            if node["provision_state"] in states and (
                waiting or not node.get("target_provision_state")
            ):
                return node["provision_state"]
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {node_uuid} is {node}, not {states}")
            time.sleep(0.2)  # polling Ironic's state with a deadline

    def changed_at(self, node_uuid: str, field: str) -> float:
        """A timestamp field of the node (Ironic's record of a change), as time.time()."""
        reply = self.session.get(f"{self.url}/v1/nodes/{node_uuid}?fields={field}", timeout=60)
        return datetime.datetime.fromisoformat(reply.json()[field]).timestamp()

    def reset(self, node_uuid: str) -> None:
        """Back to `manageable` from wherever an interrupted run left it."""
        state = self.wait_state(node_uuid, {"manageable", "inspect wait", "inspect failed"})
        if state == "inspect wait":
            self.provision(node_uuid, "abort")
            state = self.wait_state(node_uuid, {"inspect failed"})
        if state == "inspect failed":
            self.provision(node_uuid, "manage")
            self.wait_state(node_uuid, {"manageable"})

    def continue_inspection(self, node: Node) -> None:
        """What the ramdisk posts at the end of its inspection: the real
        ironic-python-agent payload with this node's MAC."""
        body = ramdisk.payload(self._template, [node.mac], "")
        reply = self.session.post(
            f"{self.url}/v1/continue_inspection",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=60,
        )
        if reply.status_code >= 400:
            raise RuntimeError(
                f"continue_inspection of {node.uuid}: {reply.status_code} {reply.text}"
            )
