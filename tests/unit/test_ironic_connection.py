"""The Ironic connection on a real HTTP server on 127.0.0.1 that answers as Ironic does:
version discovery, the headers of every request, bodies, queries, re-authentication
after a 401, what no answer becomes, keep-alive, a proxy, and TLS (a certificate made
for the test by openssl)."""

import json
import pathlib
import ssl
import subprocess
import threading
import types
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import certifi
import pytest
from keystoneauth1 import plugin
from keystoneauth1 import session as ks_session

from inspector import request_context
from inspector.ironic import API_VERSION, Ironic, connect, transport
from inspector.ironic.connection import Connection, _origin
from inspector.ironic.failures import Unreachable

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"


class FakeIronicServer(ThreadingHTTPServer):
    """Ironic's version documents, then each request answered by `answers` (status, body)
    in turn, 200 {"uuid": NODE} when they run out; every request recorded."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.seen: list[dict] = []
        self.answers: list[tuple[int, Any]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.keep_alive = True
        self.connections = 0

    def version(self, base: str | None = None) -> dict:
        return {
            "id": "v1",
            "links": [{"href": f"{base or self.url}/v1/", "rel": "self"}],
            "status": "CURRENT",
            "min_version": "1.1",
            "version": "1.99",
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeIronicServer

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        # As a proxy is asked: the whole URL (the version documents then name its host).
        proxied = self.path.startswith("http:")
        route = urllib.parse.urlsplit(self.path).path if proxied else self.path
        base = f"http://{self.headers['Host']}" if proxied else None
        if route == "/":
            return self._send(200, {"versions": [self.server.version(base)]})
        if route.rstrip("/") == "/v1":
            return self._send(200, {"id": "v1", "version": self.server.version(base)})
        self.server.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        self.server.hold.wait(10)
        status, answer = (
            self.server.answers.pop(0) if self.server.answers else (200, {"uuid": NODE})
        )
        return self._send(status, answer)

    def _send(self, status: int, answer: Any) -> None:
        payload = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-OpenStack-Request-Id", "req-1")
        if not self.server.keep_alive:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = _answer


@pytest.fixture
def server() -> Iterator[FakeIronicServer]:
    server = FakeIronicServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.hold.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def standalone(conf, server):
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", server.url, group="ironic")
    return conf


def test_requests_carry_the_microversion_and_go_under_v1(standalone, server):
    reply = connect(standalone).send("GET", f"/nodes/{NODE}")
    assert (reply.status, json.loads(reply.body), reply.request_id) == (
        200,
        {"uuid": NODE},
        "req-1",
    )
    [request] = server.seen
    assert (request["method"], request["path"]) == ("GET", f"/v1/nodes/{NODE}")
    headers = request["headers"]
    assert headers["X-OpenStack-Ironic-API-Version"] == API_VERSION
    assert headers["OpenStack-API-Version"] == f"baremetal {API_VERSION}"
    assert headers["Accept"] == "application/json"
    assert headers["User-Agent"].startswith("inspector/")
    assert "Content-Type" not in headers


GLOBAL_ID = "req-0b8f3c1e-5a4d-4e2b-9c7f-1d2e3f4a5b6c"


def test_a_call_made_for_a_request_passes_its_global_request_id_on(standalone, server):
    """As keystoneauth does with a global_request_id: X-OpenStack-Request-ID on every
    call made for the request (retries and every client thread's own, no global),
    nothing outside one, nothing Ironic would refuse to take."""
    client = Ironic(standalone, connection=connect(standalone))
    client.get_node(NODE)
    context = request_context.Context(request_id="req-own", global_request_id=GLOBAL_ID)
    with request_context.bound(context):
        client.get_node(NODE)
    server.answers = [(503, {"error_message": "busy"})]
    standalone.set_override("retry_interval", 0.01, group="ironic")
    with request_context.bound(request_context.Context(global_request_id=GLOBAL_ID)):
        Ironic(standalone, connection=connect(standalone)).get_node(NODE)  # 503, then 200
    with request_context.bound(request_context.Context(request_id="not-a-global-id")):
        client.get_node(NODE)
    ids = [request["headers"].get("X-OpenStack-Request-ID") for request in server.seen]
    assert ids == [None, GLOBAL_ID, GLOBAL_ID, GLOBAL_ID, None]


def test_a_versioned_endpoint_override_is_used_as_is(standalone, server):
    standalone.set_override("endpoint_override", server.url + "/v1/", group="ironic")
    connect(standalone).send("GET", "/ports/detail", params={"node_uuid": NODE, "limit": 1000})
    assert server.seen[0]["path"] == f"/v1/ports/detail?node_uuid={NODE}&limit=1000"


def test_bodies_are_json(standalone, server):
    connection = connect(standalone)
    connection.send("PUT", f"/nodes/{NODE}/states/power", {"target": "rebooting"})
    [request] = server.seen
    assert request["headers"]["Content-Type"] == "application/json"
    assert json.loads(request["body"]) == {"target": "rebooting"}


def test_an_error_status_is_a_reply(standalone, server):
    server.answers = [(409, {"error_message": json.dumps({"faultstring": "locked by x"})})]
    reply = connect(standalone).send("PUT", f"/nodes/{NODE}/states/power", {"target": "power on"})
    assert reply.status == 409


class TokenAuth(plugin.BaseAuthPlugin):
    """A token that changes each time it is invalidated."""

    def __init__(self) -> None:
        super().__init__()
        self.token = 1

    def get_headers(self, session: Any, **kwargs: Any) -> dict:
        return {"X-Auth-Token": f"token-{self.token}"}

    def invalidate(self) -> bool:
        self.token += 1
        return True


def test_a_401_is_sent_again_once_with_a_new_token(server):
    connection = Connection(ks_session.Session(auth=TokenAuth()), endpoint_override=server.url)
    server.answers = [(401, {"error": {"message": "expired"}}), (200, {"uuid": NODE})]
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    assert [r["headers"]["X-Auth-Token"] for r in server.seen] == ["token-1", "token-2"]
    server.answers = [(401, None), (401, None)]
    assert connection.send("GET", f"/nodes/{NODE}").status == 401  # only once more
    assert len(server.seen) == 4


def test_no_answer_is_unreachable_and_retriable(standalone, server):
    server.keep_alive = False
    connection = connect(standalone)
    connection.send("GET", f"/nodes/{NODE}")  # the endpoint is known
    server.shutdown()
    server.server_close()
    with pytest.raises(Unreachable) as caught:
        connection.send("GET", f"/nodes/{NODE}")
    assert caught.value.retriable


def test_a_hung_ironic_times_out(standalone, server):
    # Whole seconds: the keystoneauth1 of OpenStack 2026.1 (5.13) and older has an integer
    # [ironic] timeout, where 0.2 would be 0.
    standalone.set_override("timeout", 1, group="ironic")
    connection = connect(standalone)
    connection.send("GET", f"/nodes/{NODE}")
    server.hold.clear()  # the next request is answered only once the test is over
    with pytest.raises(Unreachable, match="timed out") as caught:
        connection.send("GET", f"/nodes/{NODE}")
    assert caught.value.retriable


def test_the_client_reads_nodes_through_it(standalone, server):
    server.answers = [(200, {"uuid": NODE, "name": "n1", "driver": "fake-hardware"})]
    assert Ironic(standalone).get_node("n1").uuid == NODE
    assert server.seen[0]["path"] == "/v1/nodes/n1"


def test_connections_are_kept_alive_and_a_closed_one_is_not_used(standalone, server):
    connection = connect(standalone)
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    first = server.connections  # keystoneauth's version discovery has its own
    for _ in range(5):
        assert connection.send("GET", f"/nodes/{NODE}").status == 200
    assert server.connections == first
    server.keep_alive = False  # answers with Connection: close, and closes
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    server.keep_alive = True
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    assert server.connections == first + 1
    # The server closes an idle connection (a keep-alive timeout): a new one is used.
    connection._origin._idle[0].sock.shutdown(2)
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    assert server.connections == first + 2


def test_the_environments_proxy_is_used_unless_no_proxy_names_ironic(monkeypatch, standalone):
    session = connect(standalone).session
    monkeypatch.setenv("http_proxy", "http://user:secret@proxy.example.com:3128")
    monkeypatch.setenv("no_proxy", "")
    origin = _origin(session, "http://ironic.example.com:6385/v1", 1.0)
    assert (origin.proxy.hostname, origin.proxy.port) == ("proxy.example.com", 3128)
    monkeypatch.setenv("no_proxy", "ironic.example.com")
    assert _origin(session, "http://ironic.example.com:6385/v1", 1.0).proxy is None


def test_through_a_proxy_the_request_names_the_whole_url(monkeypatch, conf, server):
    """The fake server stands in for the proxy: it sees what a proxy would be sent."""
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", "http://ironic.example.com:6385/v1", group="ironic")
    port = server.url.rsplit(":", 1)[1]
    monkeypatch.setenv("http_proxy", f"http://user:s%40cret@127.0.0.1:{port}")
    monkeypatch.setenv("no_proxy", "")
    assert connect(conf).send("GET", f"/nodes/{NODE}").status == 200
    [request] = server.seen
    assert request["path"] == f"http://ironic.example.com:6385/v1/nodes/{NODE}"
    assert request["headers"]["Host"] == "ironic.example.com:6385"
    # Basic user:s@cret
    assert request["headers"]["Proxy-Authorization"] == "Basic dXNlcjpzQGNyZXQ="


@pytest.fixture
def certificate(tmp_path) -> tuple[pathlib.Path, pathlib.Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def tls_server(certificate) -> Iterator[FakeIronicServer]:
    cert, key = certificate
    server = FakeIronicServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.url = server.url.replace("http:", "https:")
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_tls_verifies_ironic_with_the_configured_ca(conf, tls_server, certificate):
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", tls_server.url, group="ironic")
    conf.set_override("cafile", str(certificate[0]), group="ironic")
    connection = connect(conf)
    for _ in range(3):
        assert connection.send("GET", f"/nodes/{NODE}").status == 200
    assert tls_server.connections == 2  # the version document's (keystoneauth), then ours


def test_tls_refuses_an_unknown_certificate_unless_insecure(conf, tls_server):
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", tls_server.url + "/v1", group="ironic")
    conf.set_override("insecure", True, group="ironic")
    connection = connect(conf)
    assert connection.send("GET", f"/nodes/{NODE}").status == 200
    # The same connection verifying against the usual CA bundle, as without `insecure`
    # (keystoneauth's version discovery would refuse first, so it is put in place here).
    strict = transport.tls_context(True, None, certifi.where())
    connection._origin = transport.Origin(tls_server.url, timeout=5.0, context=strict)
    with pytest.raises(Unreachable, match="TLS failed") as caught:
        connection.send("GET", f"/nodes/{NODE}")
    assert not caught.value.retriable


def test_a_missing_ca_file_is_a_clear_error_not_retried(conf, tls_server):
    """keystoneauth's version discovery (requests) refuses the path before any request."""
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", tls_server.url + "/v1", group="ironic")
    conf.set_override("cafile", "/nonexistent/ironic-ca.pem", group="ironic")
    with pytest.raises(Unreachable, match=r"TLS settings.*/nonexistent/ironic-ca\.pem") as caught:
        connect(conf).send("GET", f"/nodes/{NODE}")
    assert not caught.value.retriable
    assert tls_server.connections == 0


def test_tls_options_come_from_the_session(monkeypatch, standalone, certificate):
    session = connect(standalone).session
    cert, key = certificate
    session.verify, session.cert = str(cert), (str(cert), str(key))
    origin = _origin(session, "https://ironic.example.com:6385/v1", 1.0)
    assert origin.context.verify_mode == ssl.CERT_REQUIRED and origin.context.check_hostname
    assert [c["subject"] for c in origin.context.get_ca_certs()] == [
        ((("commonName", "127.0.0.1"),),)
    ]
    session.verify = False
    insecure = _origin(session, "https://ironic.example.com:6385/v1", 1.0)
    assert insecure.context.verify_mode == ssl.CERT_NONE
    session.verify, session.cert = "/nonexistent/ca.pem", None
    connection = Connection(session, endpoint_override="https://ironic.example.com:6385/v1")
    found = types.SimpleNamespace(url="https://ironic.example.com:6385/v1")
    monkeypatch.setattr(session, "get_endpoint_data", lambda **_where: found)
    with pytest.raises(Unreachable, match="TLS settings") as caught:
        connection.send("GET", f"/nodes/{NODE}")
    assert not caught.value.retriable
