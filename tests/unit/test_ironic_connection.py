"""The Ironic connection on a real HTTP server on 127.0.0.1 that answers as Ironic does:
version discovery, the headers of every request, bodies, queries, re-authentication
after a 401, and what no answer becomes."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3
from keystoneauth1 import plugin
from keystoneauth1 import session as ks_session

from inspector.ironic import API_VERSION, Ironic, connect
from inspector.ironic.connection import Connection, _pool
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

    def version(self) -> dict:
        return {
            "id": "v1",
            "links": [{"href": f"{self.url}/v1/", "rel": "self"}],
            "status": "CURRENT",
            "min_version": "1.1",
            "version": "1.99",
        }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeIronicServer

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/":
            return self._send(200, {"versions": [self.server.version()]})
        if self.path.rstrip("/") == "/v1":
            return self._send(200, {"id": "v1", "version": self.server.version()})
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
    standalone.set_override("timeout", 0.2, group="ironic")
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


def test_the_environments_proxy_is_used_unless_no_proxy_names_ironic(monkeypatch, standalone):
    session = connect(standalone).session
    monkeypatch.setenv("http_proxy", "http://proxy.example.com:3128")
    monkeypatch.setenv("no_proxy", "")
    assert isinstance(_pool(session, "http://ironic.example.com:6385/v1"), urllib3.ProxyManager)
    monkeypatch.setenv("no_proxy", "ironic.example.com")
    pool = _pool(session, "http://ironic.example.com:6385/v1")
    assert not isinstance(pool, urllib3.ProxyManager)


def test_tls_options_come_from_the_session(standalone):
    session = connect(standalone).session
    session.verify, session.cert = "/etc/ssl/ironic-ca.pem", ("/etc/c.pem", "/etc/k.pem")
    pool = _pool(session, "https://ironic.example.com:6385/v1")
    assert pool.connection_pool_kw["ca_certs"] == "/etc/ssl/ironic-ca.pem"
    assert pool.connection_pool_kw["cert_reqs"] == "CERT_REQUIRED"
    assert pool.connection_pool_kw["cert_file"] == "/etc/c.pem"
    assert pool.connection_pool_kw["key_file"] == "/etc/k.pem"
    session.verify = False
    insecure = _pool(session, "https://ironic.example.com:6385/v1")
    assert insecure.connection_pool_kw["cert_reqs"] == "CERT_NONE"
