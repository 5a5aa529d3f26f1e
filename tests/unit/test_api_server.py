"""The built-in server (cheroot, inspector.api.server) on the wire: request framing it and
our body reader judge together, its own error answers, bodies that stop half-way, and
clients slow to send their requests. Every refusal is a 4xx in the API's format, with a
request id and the version headers, never cheroot's text/plain, a hang or a traceback."""

import contextlib
import json
import logging
import socket
import time

import pytest

from inspector.api import server
from tests.wire import answer

RULE = b'{"conditions": [], "actions": [{"action": "fail", "message": "x"}]}'
MIB = 1024 * 1024
#: Seconds a test waits for an answer that should come at once.
PROMPT = 3.0


@pytest.fixture
def serve(app):
    """Start the built-in server on `app` (a free port)."""
    started = []

    def start(**kwargs) -> server.Server:
        http = server.Server(app, "127.0.0.1", 0, **kwargs)
        http.start()
        started.append(http)
        return http

    yield start
    for http in started:
        http.stop()


@pytest.fixture
def port(serve) -> int:
    return serve().port


def connect(port: int, timeout: float = PROMPT) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    with connect(port) as sock:
        with contextlib.suppress(OSError):  # the server may answer before all is sent
            sock.sendall(data)
        return answer(sock)


def closed(sock: socket.socket) -> bool:
    """Whether the server closed sock after its answer (and sent nothing more)."""
    rest = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            rest += chunk
    assert b"HTTP/1." not in rest, f"a second answer: {rest!r}"
    return True


def assert_ours(headers: dict[str, str], body: bytes) -> str:
    """The answer is in the API's format; its message."""
    assert headers["content-type"] == "application/json"
    assert headers["x-openstack-request-id"].startswith("req-")
    assert headers["x-openstack-ironic-inspector-api-maximum-version"] == "1.19"
    assert headers["x-openstack-ironic-inspector-api-minimum-version"] == "1.0"
    return json.loads(body)["error"]["message"]


def post(path: str, body: bytes, *lengths: str, version: str = "1.1") -> bytes:
    framing = "".join(f"Content-Length: {length}\r\n" for length in lengths)
    return (
        f"POST {path} HTTP/{version}\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"{framing}\r\n".encode()
        + body
    )


# --- Content-Length ------------------------------------------------------------------


def test_content_lengths_that_differ_are_400(port):
    status, headers, body = exchange(port, post("/v1/rules", b"{}x", "2", "3"))
    assert status == 400
    assert "Content-Length" in assert_ours(headers, body)


def test_the_same_content_length_twice_is_one(port):
    status, _, body = exchange(port, post("/v1/rules", RULE, str(len(RULE)), str(len(RULE))))
    assert status == 201, body


@pytest.mark.parametrize(
    ("path", "limit"), [("/v1/rules", MIB), ("/v1/continue", 64 * MIB)], ids=["rules", "continue"]
)
def test_a_content_length_over_the_limit_is_our_413(port, path, limit):
    status, headers, body = exchange(port, post(path, b"{}", str(64 * MIB + 1)))
    assert status == 413
    assert assert_ours(headers, body) == (
        f"The request body is larger than this route's limit of {limit} bytes"
    )


@pytest.mark.parametrize(
    "length", ["9" * 21, "9" * 24, "9" * 5000, "-5", "+5", "1_0", "0x10", "12abc"]
)
def test_a_content_length_that_is_no_decimal_of_20_digits_is_400(port, length):
    status, headers, body = exchange(port, post("/v1/rules", b"{}", length))
    assert status == 400
    assert assert_ours(headers, body) == "Invalid Content-Length header"


def test_a_refused_body_is_never_read_as_the_next_request(port):
    smuggled = b"GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n"
    with connect(port) as sock:
        sock.sendall(post("/v1/rules", smuggled, "-5"))
        assert answer(sock)[0] == 400
        assert closed(sock)


def test_a_content_length_with_a_chunked_body_is_400(port):
    # Two framings: which one a proxy in front went by is anyone's guess (RFC 9112 6.1).
    head = "POST /v1/rules HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    with connect(port) as sock:
        sock.sendall(f"{head}Content-Length: 5\r\n\r\n0\r\n\r\n".encode())
        status, headers, body = answer(sock)
        assert status == 400
        assert "Transfer-Encoding" in assert_ours(headers, body)
        assert closed(sock)


# --- cheroot's own answers -----------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400),
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (server.MAX_HEADER_SIZE + 1024), 413),
        (b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ],
    ids=["header-line", "request-line", "headers-too-large", "unknown-coding"],
)
def test_the_servers_own_refusals_are_in_the_apis_format(port, request_bytes, status):
    with connect(port) as sock:
        sock.sendall(request_bytes)
        got, headers, body = answer(sock)
        assert got == status
        assert assert_ours(headers, body)
        assert headers["connection"] == "close"
        assert closed(sock)


def test_a_chunk_past_the_routes_limit_is_refused_before_it_is_read(port):
    # 2 MiB declared, 10 bytes sent: the limit of /v1/rules is 1 MiB, no need to wait.
    head = b"POST /v1/rules HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    with connect(port) as sock:
        sock.sendall(head + f"{2 * MIB:x}\r\n".encode() + b"a" * 10)
        status, headers, body = answer(sock)
    assert status == 413
    assert "limit of 1048576 bytes" in assert_ours(headers, body)


# --- bodies that stop half-way -------------------------------------------------------


def test_a_body_shorter_than_its_length_is_400_once_the_client_stops(serve, caplog):
    port = serve(timeout=0.5).port
    with connect(port) as sock:
        sock.sendall(post("/v1/rules", b'{"a":1', "100"))  # 6 of 100 bytes, then silence
        status, headers, body = answer(sock)
        assert status == 400
        assert assert_ours(headers, body) == (
            "The request body stopped short of its Content-Length (100 bytes)"
        )
        assert closed(sock)
    lines = [r for r in caplog.records if "request body" in r.getMessage()]
    assert len(lines) == 1 and not lines[0].exc_info, caplog.text
    assert "Traceback" not in caplog.text


def test_a_client_silent_in_its_headers_gets_408(serve):
    port = serve(timeout=0.5).port
    with connect(port) as sock:
        sock.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n")
        status, headers, body = answer(sock)
        assert status == 408
        assert assert_ours(headers, body)
        assert closed(sock)


def test_a_body_whose_client_hangs_up_early_is_400(port):
    with connect(port) as sock:
        sock.sendall(post("/v1/rules", b'{"a":1', "100"))
        sock.shutdown(socket.SHUT_WR)
        status, headers, body = answer(sock)
    assert status == 400
    assert "stopped short of its Content-Length" in assert_ours(headers, body)


# --- slow clients --------------------------------------------------------------------

#: Clients that connect and send nothing, and clients that send part of their headers.
SILENT, SLOW = 40, 24


def test_clients_slow_to_send_do_not_hold_up_the_others(port):
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        for number in range(SILENT + SLOW):
            sock = stack.enter_context(connect(port))
            if number >= SILENT:
                sock.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n")
        status, _, _ = exchange(port, b"GET /v1/introspection HTTP/1.1\r\nHost: x\r\n\r\n")
        took = time.monotonic() - started
    assert status == 200
    # Queued behind a slow client, it would have waited for its read timeout (and a
    # connection the kernel could not queue, for the client's SYN retries: 1 s, 3 s...).
    assert took < server.TIMEOUT / 2, f"{took:.1f} s"


def test_the_server_logs_through_our_loggers_without_a_stack(serve, caplog):
    caplog.set_level(logging.INFO)
    serve().cheroot.error_log("socket.error 'reset'", level=logging.WARNING, traceback=True)
    (record,) = [r for r in caplog.records if "socket.error" in r.getMessage()]
    assert record.name == "inspector.api.server" and not record.exc_info


@pytest.fixture
def sends(monkeypatch) -> list[bytes]:
    """Every send of the server's socket writers (what a kill between two can split)."""
    sent: list[bytes] = []
    original = server.cheroot_makefile.BufferedWriter.write

    def write(self, data):
        sent.append(bytes(data))
        return original(self, data)

    monkeypatch.setattr(server.cheroot_makefile.BufferedWriter, "write", write)
    return sent


def test_an_answers_head_and_body_leave_in_one_send(port, sends):
    """A process killed between the head and the body would leave its client a head
    with no body, which no proxy can retry: both go in one write, on each request of a
    kept-alive connection."""
    with connect(port) as sock:
        for _ in range(2):
            sock.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n\r\n")
            status, _headers, body = answer(sock)
            assert status == 200 and json.loads(body)["resources"]
    assert len(sends) == 2
    for sent in sends:
        assert sent.startswith(b"HTTP/1.1 200") and sent.endswith(body)


def test_an_answer_without_a_body_still_leaves_whole(port, sends):
    with connect(port) as sock:
        sock.sendall(b"HEAD /v1 HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while not received.endswith(b"\r\n\r\n"):
            chunk = sock.recv(65536)
            assert chunk, f"closed without an answer: {received!r}"
            received += chunk
    assert received.startswith(b"HTTP/1.1 200") and sends == [received]
