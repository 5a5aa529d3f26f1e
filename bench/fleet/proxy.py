"""A counting HTTP proxy in front of Ironic: every call a service under test makes, its
node, its duration, and the power-on that boots a simulated ramdisk.

The services under test (ours, ironic-inspector, the floor) are configured with the
proxy's URL as their Ironic endpoint, so all three are measured on the same path.
Calls are attributed to a node by the node's UUID or name in the path, or by the
`node_uuid`/`node` filter of a port listing; a listing of nodes or ports without such a
filter is counted as a "list all". A `PUT /v1/nodes/{id}/states/power` answered 2xx
calls `on_power(node_uuid, target)`: a power-on boots the node's simulated ramdisk.
"""

import collections
import dataclasses
import http.client
import http.server
import json
import re
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable

#: Request headers not forwarded (hop-by-hop, or rewritten by http.client).
HOP_BY_HOP = {"connection", "keep-alive", "host", "content-length", "transfer-encoding"}
NODE_PATH = re.compile(r"^/v1/nodes/(?P<ident>[^/?]+)(?P<rest>/[^?]*)?$")
POWER_ON_TARGETS = frozenset({"power on", "rebooting"})
#: (method, path with query, body, headers) -> (status, headers, body)
Upstream = Callable[[str, str, bytes | None, dict[str, str]], tuple[int, list, bytes]]


@dataclasses.dataclass(frozen=True)
class Call:
    """One proxied request: its kind (method and path pattern), the node it concerns,
    how long Ironic took (seconds), the status it answered and when."""

    kind: str
    node: str | None
    seconds: float
    status: int
    lists_all: bool
    at: float  # time.monotonic() when the answer came back


def classify(method: str, target: str) -> tuple[str, str | None, bool]:
    """(kind, node ident, lists all) of a request line's method and target."""
    parsed = urllib.parse.urlsplit(target)
    path = parsed.path.rstrip("/") or "/"
    query = urllib.parse.parse_qs(parsed.query)
    match = NODE_PATH.match(path)
    if match:
        rest = re.sub(r"/[0-9a-f-]{36}", "/{id}", match.group("rest") or "")
        return f"{method} node{rest}", match.group("ident"), False
    if path in ("/v1/ports", "/v1/ports/detail"):
        node = (query.get("node_uuid") or query.get("node") or [None])[0]
        if "sort_key" in query:  # the PXE filter's short listings of the ports changed
            return f"{method} ports sorted", node, False
        lists_all = method == "GET" and node is None and "address" not in query
        return f"{method} ports", node, lists_all
    if path in ("/v1/nodes", "/v1/nodes/detail"):
        lists_all = method == "GET" and not ({"associated", "instance_uuid"} & set(query))
        return f"{method} nodes", None, lists_all
    return f"{method} {re.sub(r'/[0-9a-f-]{36}', '/{id}', path)}", None, False


class Ledger:
    """The calls seen since the last reset; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self.names: dict[str, str] = {}  # node name -> uuid, to attribute calls by name

    def add(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def reset(self) -> list[Call]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def uuid_of(self, ident: str | None) -> str | None:
        return self.names.get(ident, ident) if ident else None


def summary(calls: list[Call], nodes: set[str], names: dict[str, str]) -> dict:
    """Calls per introspection of `nodes` (by kind), time Ironic took for them, and the
    calls not attributable to one node (periodic work), with the "list all" count."""
    per_kind: collections.Counter[str] = collections.Counter()
    refused = 0  # answered 409 (NodeLocked: a power action held the node), then retried
    seconds = 0.0
    others: collections.Counter[str] = collections.Counter()
    lists_all = 0
    for call in calls:
        lists_all += call.lists_all
        node = names.get(call.node, call.node) if call.node else None
        if node in nodes:
            per_kind[call.kind] += 1
            refused += call.status == 409
            seconds += call.seconds
        else:
            others[call.kind] += 1
    count = max(len(nodes), 1)
    return {
        "ironic_calls_per_introspection": sum(per_kind.values()) / count,
        "ironic_refused_calls_per_introspection": refused / count,
        "ironic_calls_by_kind": {kind: n / count for kind, n in sorted(per_kind.items())},
        "ironic_seconds_per_introspection": seconds / count,
        "ironic_other_calls": dict(sorted(others.items())),
        "ironic_list_all_calls": lists_all,
    }


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body go in two writes: with Nagle's algorithm the body waited
    # for the client's delayed ACK of the headers, tens of ms on every call.
    disable_nagle_algorithm = True
    server: "_Server"

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per call would cost more than the call

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        started = time.perf_counter()
        status, reply_headers, payload = self.server.upstream(
            self.command, self.path, body, headers
        )
        seconds = time.perf_counter() - started
        kind, node, lists_all = classify(self.command, self.path)
        call = Call(kind, node, seconds, status, lists_all, time.monotonic())
        self.server.ledger.add(call)
        self.send_response(status)
        for key, value in reply_headers:
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if kind == "PUT node/states/power" and 200 <= status < 300 and body:
            target = json.loads(body).get("target")
            self.server.on_power(self.server.ledger.uuid_of(node), target)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: object, client_address: object) -> None:
        """A client gone mid-answer (a worker killed -9) is not worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __init__(
        self,
        upstream: "str | Upstream",
        ledger: Ledger,
        on_power: Callable[[str | None, str], None],
    ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        if isinstance(upstream, str):
            parsed = urllib.parse.urlsplit(upstream)
            self._host, self._port = parsed.hostname, parsed.port or 80
            self.upstream = self._forward
        else:
            self.upstream = upstream
        self._local = threading.local()
        self.ledger = ledger
        self.on_power = on_power

    def _forward(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Ironic's answer, on this thread's kept-alive connection (reopened once)."""
        for attempt in (1, 2):
            connection = getattr(self._local, "connection", None)
            if connection is None:
                connection = http.client.HTTPConnection(self._host, self._port, timeout=120)
                self._local.connection = connection
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            except (ConnectionError, http.client.HTTPException):
                connection.close()
                self._local.connection = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class Proxy:
    """The proxy, serving on its own thread until stop(): forwarding to Ironic's URL, or
    answering through an Upstream (the fake Ironic)."""

    def __init__(
        self, upstream: "str | Upstream", on_power: Callable[[str | None, str], None]
    ) -> None:
        self.ledger = Ledger()
        self._server = _Server(upstream, self.ledger, on_power)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="ironic-proxy", daemon=True
        )

    def start(self) -> "Proxy":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
