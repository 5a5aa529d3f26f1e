"""The fleet benchmark's simulated ramdisks post as ironic-python-agent does: a new
connection each time, a connection error or a 5xx sent again (up to 5 attempts), a 4xx
final; every failed attempt is recorded."""

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.fleet import ramdisk
from tests.integration.cluster import wait_for


class Service(ThreadingHTTPServer):
    """/v1/continue answering each post with the next of `answers` (then 200)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.answers: list[int] = []
        self.posts: list[tuple[str, int]] = []  # (client port, answered status)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Service

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        status = self.server.answers.pop(0) if self.server.answers else 200
        self.server.posts.append((self.client_address[1], status))
        body = b'{"uuid": "x"}'
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def service() -> Iterator[Service]:
    server = Service()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def ramdisks(monkeypatch) -> Iterator[ramdisk.Ramdisks]:
    monkeypatch.setattr(ramdisk, "RETRY_WAITS", (0.01, 0.01, 0.01, 0.01))
    disks = ramdisk.Ramdisks(boot_delay=0.0, threads=2)
    yield disks
    disks.stop()


def test_a_5xx_is_posted_again_on_a_new_connection(service, ramdisks):
    service.answers = [503, 502]
    ramdisks.register({"n1": b"{}"}, service.url)
    ramdisks.boot("n1")
    wait_for(lambda: len(service.posts) == 3, 5, 0.01, "three attempts")
    # The service counts a post before the ramdisk has read its answer and recorded it.
    wait_for(lambda: len(ramdisks.latencies()) == 3, 5, 0.01, "the three answers recorded")
    assert [status for _, status in service.posts] == [503, 502, 200]
    assert len({port for port, _ in service.posts}) == 3  # no keep-alive reuse
    assert [(n, a, s) for n, a, s, _ in ramdisks.failures] == [("n1", 1, 503), ("n1", 2, 502)]
    assert [status for _, status in ramdisks.latencies()] == [503, 502, 200]


def test_a_4xx_is_final(service, ramdisks):
    service.answers = [404]
    ramdisks.register({"n1": b"{}", "n2": b"{}"}, service.url)
    ramdisks.boot("n1")
    wait_for(lambda: len(service.posts) == 1, 5, 0.01, "the post")
    ramdisks.boot("n2")  # posted after n1 would have been retried
    wait_for(lambda: len(service.posts) == 2, 5, 0.01, "the second node's post")
    assert [status for _, status in service.posts] == [404, 200]
    assert [(n, a, s) for n, a, s, _ in ramdisks.failures] == [("n1", 1, 404)]


def test_no_answer_is_tried_five_times(ramdisks):
    ramdisks.register({"n1": b"{}"}, "http://127.0.0.1:9")  # discard: nothing listens
    ramdisks.boot("n1")
    wait_for(lambda: len(ramdisks.failures) == ramdisk.ATTEMPTS, 10, 0.01, "five attempts")
    assert [(a, s) for _, a, s, _ in ramdisks.failures] == [(a, 0) for a in range(1, 6)]
    assert ramdisks.failures[0][3].startswith("ConnectionError")
