"""The L7 retries and request ids of etc/inspector/haproxy.cfg, with the real haproxy.

The shipped file is run as it is, but for its addresses (binds, servers, stats socket,
log), in front of fake back ends that die with the first attempt of every request (they
close the connection without a byte of answer, as an API process killed mid-request
does) and answer the next. A client through the proxy must get every answer, from
another back end than the one that died, with the same X-Request-ID on both attempts
(the proxy's, not the one the client sent); the routes the file excludes are not
retried, and neither is a request larger than HAProxy's buffer.

Then the back ends serve the real API (one in-process app: SQLite, fake Ironic, a
recording queue) and die only after it answered, its work committed: the way an API
process killed between its commit and its answer leaves a request. The real
python-ironic-inspector-client must see its start and abort succeed, each done once.
"""

import contextlib
import http.server
import json
import os
import re
import signal
import subprocess
import threading
import uuid

import pytest
import requests
from ironic_inspector_client import ClientV1
from keystoneauth1 import session as ks_session

from inspector import conf as config
from inspector.api import app as app_factory
from inspector.machine import ABORT_REASON, State
from inspector.store import Store, schema
from tests.api_steps import RecordingQueue, move
from tests.fakes.ironic import FakeIronic
from tests.integration.cluster import ROOT, free_port, wait_for
from tests.integration.test_haproxy import find_haproxy

pytestmark = pytest.mark.integration

SHIPPED = ROOT / "etc" / "inspector" / "haproxy.cfg"
#: Seconds haproxy gets to start and see its back ends healthy, or to leave.
HAPROXY_TIMEOUT = 15.0
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class Backends:
    """Fake API processes on 127.0.0.1: each request's first attempt (by X-Request-ID,
    whichever back end gets it) is dropped, the next answered 200 with who answered.
    With `serve` set (method, path, headers, body -> status, headers, body), every
    attempt is served by it first: the first attempt's answer is then dropped after the
    work was done, and `before_drop` (method, path) runs in between."""

    def __init__(self, count: int) -> None:
        self.attempts: list[tuple[str, str, str, str | None]] = []  # server, method, path, id
        self.serve = None
        self.before_drop = None
        self._guard = threading.Lock()
        self.servers: dict[str, http.server.ThreadingHTTPServer] = {}
        for index in range(1, count + 1):
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler(f"s{index}"))
            server.daemon_threads = True
            self.servers[f"s{index}"] = server
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def ports(self) -> dict[str, int]:
        return {name: server.server_address[1] for name, server in self.servers.items()}

    def of(self, request_id: str | None) -> list[tuple[str, str, str]]:
        return [(s, m, p) for s, m, p, i in self.attempts if i == request_id]

    def _handler(self, name: str):
        backends = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _serve(self) -> None:
                if self.path == "/healthcheck":
                    self._answer({"healthy": True})
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request_id = self.headers.get("X-Request-ID")
                with backends._guard:
                    first = not any(i == request_id for *_, i in backends.attempts)
                    backends.attempts.append((name, self.command, self.path, request_id))
                answer = None
                if backends.serve is not None:
                    answer = backends.serve(self.command, self.path, dict(self.headers), body)
                if first:  # dies with the request: no answer, the connection closed
                    if backends.before_drop is not None:
                        backends.before_drop(self.command, self.path)
                    self.close_connection = True
                    return
                if answer is None:
                    self._answer({"server": name, "request_id": request_id})
                else:
                    self._answer(*answer)

            def _answer(self, body, status: int = 200, headers=None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for header, value in (headers or {"Content-Type": "application/json"}).items():
                    if header.lower() not in ("content-length", "connection"):
                        self.send_header(header, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _serve

        return Handler

    def close(self) -> None:
        for server in self.servers.values():
            server.shutdown()
            server.server_close()


def render(shipped: str, port: int, servers: dict[str, int], sock) -> str:
    """The shipped file with this test's addresses, in the foreground, logging to stderr."""
    lines = []
    for line in shipped.splitlines():
        word = line.split()[0] if line.split() else ""
        if word in ("user", "group", "daemon", "bind", "server"):
            continue
        if word == "log" and line.startswith("    log /"):
            lines.append("    log stderr format short local0 info")
        elif word == "stats" and "socket" in line:
            lines.append(f"    stats socket {sock} mode 600 level admin")
        else:
            lines.append(line)
        if line.startswith("frontend "):
            lines.append(f"    bind 127.0.0.1:{port}")
    lines += [f"    server {name} 127.0.0.1:{p} check" for name, p in servers.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def backends():
    fakes = Backends(3)
    try:
        yield fakes
    finally:
        fakes.close()


@pytest.fixture
def proxy(tmp_path, backends):
    """haproxy on the shipped file in front of the fakes: its URL."""
    binary = find_haproxy()
    port, config, log = free_port(), tmp_path / "haproxy.cfg", tmp_path / "haproxy.log"
    config.write_text(
        render(SHIPPED.read_text(), port, backends.ports(), tmp_path / "haproxy.sock")
    )
    check = subprocess.run(
        [binary, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30, check=False
    )
    assert check.returncode == 0, f"haproxy -c: {check.stdout}{check.stderr}"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [binary, "-db", "-f", str(config)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            assert process.poll() is None, log.read_text()
            with contextlib.suppress(requests.RequestException):
                return requests.get(url + "/healthcheck", timeout=2).status_code == 200
            return False

        wait_for(up, HAPROXY_TIMEOUT, message="haproxy answering /healthcheck")
        yield url
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(HAPROXY_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        print(f"----- haproxy log\n{log.read_text(errors='replace')[-5000:]}")


def test_a_request_whose_back_end_dies_is_answered_by_another(proxy, backends):
    """Over one keep-alive connection, as python-ironic-inspector-client sends them."""
    session = requests.Session()
    node = str(uuid.uuid4())
    calls = [
        ("GET", "/v1"),
        ("POST", f"/v1/introspection/{node}"),
        ("GET", f"/v1/introspection/{node}"),
        ("GET", "/v1/introspection"),
        ("POST", f"/v1/introspection/{node}/abort"),
        ("POST", f"/v1/introspection/{node}/data/unprocessed"),
        ("POST", "/v1/continue"),
        ("GET", "/v1/rules"),
    ]
    for method, path in calls:
        # What the client says its request's id is does not count: the proxy's does.
        answer = session.request(
            method, proxy + path, json={}, headers={"X-Request-ID": "from-the-client"}, timeout=10
        )
        assert answer.status_code == 200, (method, path, answer.text)
        request_id = answer.json()["request_id"]
        assert UUID.fullmatch(request_id), request_id
        attempts = backends.of(request_id)
        assert [(m, p) for _, m, p in attempts] == [(method, path)] * 2, attempts
        assert attempts[0][0] != attempts[1][0], f"retried on the back end that died: {attempts}"
        assert answer.json()["server"] == attempts[1][0]
    ids = {i for *_, i in backends.attempts}
    assert len(ids) == len(calls), "one id per request, none shared"
    assert not backends.of("from-the-client")


@pytest.mark.parametrize(
    ("method", "path"), [("POST", "/v1/rules"), ("DELETE", "/v1/rules"), ("DELETE", "/v1/rules/x")]
)
def test_what_is_unsafe_to_send_again_is_not_retried(proxy, backends, method, path):
    try:
        answer = requests.request(method, proxy + path, json={}, timeout=10)
    except requests.ConnectionError:
        answer = None  # the connection closed without an answer
    assert answer is None or answer.status_code == 502, answer.text
    assert [(m, p) for _, m, p, _ in backends.attempts] == [(method, path)], backends.attempts


def test_a_request_larger_than_the_buffer_is_not_retried(proxy, backends):
    """tune.bufsize (16 kB) holds the request to retry: a larger one gets a 502."""
    payload = {"inventory": {}, "logs": "x" * 32 * 1024}
    answer = requests.post(proxy + "/v1/continue", json=payload, timeout=10)
    assert answer.status_code == 502, answer.text
    assert [(m, p) for _, m, p, _ in backends.attempts] == [("POST", "/v1/continue")]
    # One that fits is retried.
    answer = requests.post(proxy + "/v1/continue", json={"inventory": {}}, timeout=10)
    assert answer.status_code == 200, answer.text


# ---------------------------------------------------------------- the real API behind


@pytest.fixture
def api(tmp_path, backends):
    """The real API app behind the fake back ends: (store, queue, ironic)."""
    conf = config.load([], conf=config.build())
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_strategy", "noauth")
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    store, queue, ironic = Store.from_url(url), RecordingQueue(), FakeIronic()
    app = app_factory.create_app(conf, store=store, queue=queue, ironic=ironic)

    def serve(method, path, headers, body):
        answer = app.test_client().open(path, method=method, headers=headers, data=body)
        return answer.get_data(), answer.status_code, dict(answer.headers)

    backends.serve = serve
    try:
        yield store, queue, ironic
    finally:
        store.close()


def test_the_client_sees_a_start_and_an_abort_whose_answer_was_lost(proxy, backends, api):
    """The first attempt of each took effect, then its back end died: the node moved on
    meanwhile (its worker took the start), so a new start would be a 409 and a new
    abort a 400; the attempt sent again is the same request, and answered 202."""
    store, queue, ironic = api
    node = ironic.add_node(provision_state="manageable").uuid
    client = ClientV1(inspector_url=proxy, session=ks_session.Session(auth=None, timeout=10))

    def worker_takes_it(method, path):
        if method == "POST" and path.endswith(node):
            move(store, node, "wait", State.WAITING)

    backends.before_drop = worker_takes_it
    client.introspect(node)
    assert store.get_node(node).state == State.WAITING
    backends.before_drop = None
    client.abort(node)
    status = client.get_status(node)
    assert (status["state"], status["error"]) == ("error", ABORT_REASON)

    # Each was done once, recorded under the id HAProxy gave both of its attempts.
    ids = {path: i for _, method, path, i in backends.attempts if method == "POST"}
    history = [(r.event, r.request_id) for r in store.history(node)]
    assert ("inspect", ids[f"/v1/introspection/{node}"]) in history
    assert ("abort", ids[f"/v1/introspection/{node}/abort"]) in history
    assert [event for event, _ in history].count("inspect") == 1
    assert [event for event, _ in history].count("abort") == 1
    assert {(r.event, r.request_id) for r in queue.requests} == {
        ("inspect", ids[f"/v1/introspection/{node}"]),
        ("abort", ids[f"/v1/introspection/{node}/abort"]),
    }
