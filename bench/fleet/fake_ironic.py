"""A fake Ironic answering from memory, for the engine-alone scenario: the calls an
introspection makes, at no Ironic cost, behind the same counting proxy.

Seeded from the real Ironic (its version documents, the batch's nodes and their ports),
it answers: the version documents; GET a node; port listings by node or address;
PATCH a node (JSON patch add/replace/remove); boot device and power state changes
(power states change at once); node and port listings. Anything else is a 404.
"""

import copy
import json
import threading
import urllib.parse

import requests

from bench.fleet.ironic import HEADERS
from bench.fleet.proxy import NODE_PATH

JSON = [("Content-Type", "application/json")]
POWER = {"power on": "power on", "rebooting": "power on", "power off": "power off"}


class FakeIronic:
    """The upstream callable of a Proxy: (method, path, body, headers) -> answer."""

    def __init__(self, url: str, node_uuids: list[str]) -> None:
        session = requests.Session()
        session.headers.update(HEADERS)
        self._lock = threading.Lock()
        self._documents = {}
        for path in ("/", "/v1", "/v1/"):
            reply = session.get(url + path, timeout=60)
            self._documents[path] = (reply.status_code, reply.content)
        version = session.get(url + "/v1", timeout=60).headers
        self._headers = JSON + [
            (key, value) for key, value in version.items() if "version" in key.lower()
        ]
        self.nodes: dict[str, dict] = {}
        self.ports: dict[str, list[dict]] = {}
        for uuid in node_uuids:
            node = session.get(f"{url}/v1/nodes/{uuid}", timeout=60).json()
            self.nodes[uuid] = node
            listing = session.get(
                f"{url}/v1/ports/detail", params={"node_uuid": uuid}, timeout=60
            ).json()
            self.ports[uuid] = listing["ports"]
        self._names = {node["name"]: uuid for uuid, node in self.nodes.items() if node["name"]}
        session.close()

    def __call__(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        parsed = urllib.parse.urlsplit(target)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query)
        if method == "GET" and path in self._documents:
            status, content = self._documents[path]
            return status, JSON, content
        with self._lock:
            return self._answer(method, path.rstrip("/"), query, body)

    def _answer(self, method: str, path: str, query: dict, body: bytes | None):
        match = NODE_PATH.match(path)
        if match:
            uuid = self._names.get(match.group("ident"), match.group("ident"))
            node = self.nodes.get(uuid)
            if node is None:
                return self._error(404, f"Node {uuid} could not be found.")
            return self._node(method, node, match.group("rest") or "", body)
        if method == "GET" and path in ("/v1/ports", "/v1/ports/detail"):
            owner = (query.get("node_uuid") or query.get("node") or [None])[0]
            owner = self._names.get(owner, owner)
            ports = (
                self.ports.get(owner, [])
                if owner
                else [port for node_ports in self.ports.values() for port in node_ports]
            )
            if "address" in query:
                ports = [p for p in ports if p["address"] in query["address"]]
            return self._json(200, {"ports": ports})
        if method == "GET" and path in ("/v1/nodes", "/v1/nodes/detail"):
            return self._json(200, {"nodes": list(self.nodes.values())})
        return self._error(404, f"{method} {path} is not faked")

    def _node(self, method: str, node: dict, rest: str, body: bytes | None):
        if method == "GET" and not rest:
            return self._json(200, node)
        if method == "PATCH" and not rest:
            for op in json.loads(body or b"[]"):
                _apply(node, op)
            return self._json(200, node)
        if method == "PUT" and rest == "/management/boot_device":
            return 204, self._headers, b""
        if method == "PUT" and rest == "/states/power":
            target = json.loads(body or b"{}").get("target")
            if target not in POWER:
                return self._error(400, f"bad power target {target!r}")
            node["power_state"] = POWER[target]
            return 202, self._headers, b""
        return self._error(404, f"{method} node{rest} is not faked")

    def _json(self, status: int, value: object):
        return status, self._headers, json.dumps(value).encode()

    def _error(self, status: int, message: str):
        body = {"error_message": json.dumps({"faultstring": message, "debuginfo": None})}
        return self._json(status, body)


def _apply(document: dict, op: dict) -> None:
    """One JSON-patch operation (add, replace or remove) on nested dicts."""
    keys = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
    parent = document
    for key in keys[:-1]:
        parent = parent.setdefault(key, {})
    if op["op"] == "remove":
        parent.pop(keys[-1], None)
    else:
        parent[keys[-1]] = copy.deepcopy(op["value"])
