"""scripts/demo.py, the quickstart's walk-through, against a small HTTP stand-in for
Ironic and Inspector: each step checks what it says (step 3: Ironic reports the node
powered on), fails with a clear line when it did not happen, and the nodes it enrolled
are deleted from Ironic in every case. (tests/e2e/test_bare_clone.py runs it against the
real ones.)"""

import contextlib
import json
import pathlib
import re
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.script_modules import load_script

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_demo():
    """scripts/demo.py as a module."""
    return load_script("demo")


class Lab:
    """Ironic's and Inspector's few routes the walk-through uses, on one port, with
    fake hardware that does what it is told at once unless told otherwise."""

    def __init__(self, *, powers_on: bool = True, boot_device: str = "pxe") -> None:
        self.powers_on = powers_on
        self.boot_device = boot_device
        self.nodes: dict[str, dict] = {}
        self.ports: dict[str, str] = {}  # MAC -> node uuid
        self.introspections: dict[str, dict] = {}
        self.lock = threading.Lock()

    def handle(self, method: str, path: str, body: dict | None) -> tuple[int, dict | None]:
        with self.lock:
            parts = path.strip("/").split("/")
            match method, parts:
                case "POST", ["v1", "nodes"]:
                    node = {
                        "uuid": str(uuid.uuid4()),
                        "name": body["name"],
                        "provision_state": "enroll",
                        "power_state": None,
                        "target_power_state": None,
                        "properties": {},
                    }
                    self.nodes[node["uuid"]] = node
                    return 201, node
                case "POST", ["v1", "ports"]:
                    self.ports[body["address"]] = body["node_uuid"]
                    return 201, {"uuid": str(uuid.uuid4())}
                case "PUT", ["v1", "nodes", node, "states", "provision"]:
                    self.nodes[node]["provision_state"] = "manageable"
                    return 202, None
                case "GET", ["v1", "nodes", node]:
                    return (200, self.nodes[node]) if node in self.nodes else (404, {})
                case "GET", ["v1", "nodes", node, "management", "boot_device"]:
                    return 200, {"boot_device": self.boot_device, "persistent": False}
                case "DELETE", ["v1", "nodes", node]:
                    self.nodes.pop(node)
                    return 204, None
                case "POST", ["v1", "introspection", node]:
                    self.introspections[node] = {"state": "waiting", "finished": False}
                    if self.powers_on:
                        self.nodes[node]["power_state"] = "power on"
                    return 202, None
                case "GET", ["v1", "introspection", node]:
                    return 200, {**self.introspections[node], "error": None}
                case "POST", ["v1", "continue"]:
                    mac = body["inventory"]["interfaces"][0]["mac_address"]
                    node = self.ports[mac]
                    self.nodes[node]["properties"] = {
                        "cpus": "2",
                        "memory_mb": "1024",
                        "cpu_arch": "x86_64",
                        "local_gb": "10",
                    }
                    self.nodes[node]["power_state"] = "power off"
                    self.introspections[node] = {"state": "finished", "finished": True}
                    return 200, {"uuid": node}
            return 404, {"error": f"{method} {path}"}


@contextlib.contextmanager
def serving(lab: Lab):
    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            status, document = lab.handle(self.command, self.path, body)
            data = json.dumps(document).encode() if document is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def run_demo(monkeypatch, capsys, lab: Lab, deadline: float = 5.0) -> tuple[int, list[str]]:
    demo = load_demo()
    monkeypatch.setattr(demo, "DEADLINE", deadline)
    with serving(lab) as url:
        monkeypatch.setattr(sys, "argv", ["demo.py", "--inspector", url, "--ironic", url])
        status = demo.main()
    return status, capsys.readouterr().out.splitlines()


def test_the_walk_through_checks_each_step_and_deletes_its_nodes(monkeypatch, capsys):
    lab = Lab()
    status, lines = run_demo(monkeypatch, capsys, lab)
    assert status == 0, lines
    assert all(line.startswith("quickstart: demo: ") for line in lines), lines
    step3 = next(line for line in lines if "demo: 3." in line)
    assert step3.endswith("Ironic says 'power on', boot 'pxe'")
    assert any(re.search(r"demo: 6\. .*power 'power off'$", line) for line in lines), lines
    assert lines[-1] == "quickstart: demo: deleted the 3 nodes it enrolled from Ironic"
    assert lab.nodes == {}


def test_a_node_that_never_powers_on_fails_step_3(monkeypatch, capsys):
    lab = Lab(powers_on=False)
    status, lines = run_demo(monkeypatch, capsys, lab, deadline=1.0)
    assert status == 1
    assert not any("demo: 3." in line or "demo: 4." in line for line in lines), lines
    assert (
        "quickstart: demo: FAILED: Ironic powering the node on did not happen within 1 s "
        "(Ironic says power None)"
    ) in lines
    # Its nodes deleted all the same.
    assert lines[-1] == "quickstart: demo: deleted the 3 nodes it enrolled from Ironic"
    assert lab.nodes == {}


def test_a_node_set_to_boot_elsewhere_fails_step_3(monkeypatch, capsys):
    status, lines = run_demo(monkeypatch, capsys, Lab(boot_device="disk"))
    assert status == 1
    assert "quickstart: demo: FAILED: Ironic says the node boots from 'disk', not from PXE" in (
        lines
    )


def test_nodes_ironic_refuses_to_delete_fail_the_walk_through(monkeypatch, capsys):
    lab = Lab()
    original = lab.handle

    def locked(method, path, body):
        if method == "DELETE":
            return 409, {"error_message": "Node is locked by host inspector-test"}
        return original(method, path, body)

    lab.handle = locked
    status, lines = run_demo(monkeypatch, capsys, lab, deadline=1.0)
    assert status == 1
    assert lines[-1].startswith("quickstart: demo: FAILED: these nodes are still in Ironic: ")
    assert "Node is locked by host" in lines[-1]
    assert len(lab.nodes) == 3
