"""The documented production command (docs/api.md, "Serving"):

    INSPECTOR_CONFIG_FILES=/etc/inspector/inspector.conf \
        gunicorn --bind 127.0.0.1:PORT --workers 2 --worker-class gthread --threads 8 \
            'inspector.api.wsgi:application'

run as a user would, from another directory, next to a real `inspector worker`.
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse

import pytest
import requests

from tests import wire
from tests.integration.cluster import Deployment, free_port, wait_for

pytestmark = pytest.mark.integration

#: Seconds gunicorn gets to answer, and to leave after SIGTERM.
GUNICORN_TIMEOUT = 30.0


def find_gunicorn() -> str:
    """The gunicorn of this virtualenv (the `test` extra installs it), else from PATH."""
    path = str(pathlib.Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    binary = shutil.which("gunicorn", path=path)
    assert binary, "gunicorn is not installed: pip install -e '.[test]'"
    return binary


@pytest.fixture
def deployment(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, ironic_api):
    cluster = Deployment(
        tmp_path,
        database_url=postgresql_url,
        queue_url=rabbitmq_url,
        queue_name=queue_name,
        redis_url=redis_url,
        ironic_url=ironic_api.url,
    )
    try:
        cluster.start(apis=0, workers=1)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def gunicorn(deployment, tmp_path):
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    # HOME: recent gunicorn opens a control socket under ~/.gunicorn; keep it ours.
    env = dict(os.environ, INSPECTOR_CONFIG_FILES=str(deployment.config_path), HOME=str(tmp_path))
    command = [
        find_gunicorn(),
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "2",
        "--worker-class",
        "gthread",
        "--threads",
        "8",
        "inspector.api.wsgi:application",
    ]
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"

    def answers():
        assert process.poll() is None, f"gunicorn exited:\n{log_path.read_text()}"
        try:
            return requests.get(url + "/", timeout=2)
        except requests.RequestException:
            return None

    try:
        wait_for(answers, GUNICORN_TIMEOUT, message=lambda: f"gunicorn\n{log_path.read_text()}")
        yield url
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=GUNICORN_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        print(f"----- gunicorn {log_path}\n{log_path.read_text()[-5000:]}")
    assert process.returncode == 0, log_path.read_text()


def test_gunicorn_serves_the_api(gunicorn, deployment, ironic_api):
    root = requests.get(gunicorn + "/", timeout=10)
    assert root.status_code == 200
    assert root.json()["versions"][0]["id"] == "1.19"
    assert root.json()["versions"][0]["links"][0]["href"] == f"{gunicorn}/v1"
    assert root.headers["X-OpenStack-Ironic-Inspector-API-Minimum-Version"] == "1.0"
    assert root.headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"
    assert requests.get(gunicorn + "/healthcheck", timeout=10).json() == {"status": "ok"}

    node = ironic_api.enroll()["uuid"]
    missing = requests.get(f"{gunicorn}/v1/introspection/{node}", timeout=10)
    assert missing.status_code == 404
    assert "error" in missing.json()
    started = requests.post(f"{gunicorn}/v1/introspection/{node}", timeout=10)
    assert started.status_code == 202, started.text

    def status():
        answer = requests.get(f"{gunicorn}/v1/introspection/{node}", timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert status()["state"] in ("starting", "waiting")

    # Both gunicorn workers read the state the worker process wrote.
    def reached_waiting():
        current = status()
        return current if current["state"] == "waiting" else None

    waiting = wait_for(
        reached_waiting,
        30,
        message=lambda: f"{node} waiting\n{deployment.logs()}",
    )
    assert all(status() == waiting for _ in range(10))
    assert waiting["links"][0]["href"] == f"{gunicorn}/v1/introspection/{node}"
    listing = requests.get(f"{gunicorn}/v1/introspection", timeout=10).json()
    assert [s["uuid"] for s in listing["introspection"]] == [node]
    aborted = requests.post(f"{gunicorn}/v1/introspection/{node}/abort", timeout=10)
    assert aborted.status_code == 202, aborted.text
    assert status()["error"] == "Canceled by operator"


def raw(url: str, data: bytes, *, hang_up: bool = False) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes (then close our side when hang_up); the answer's status, headers
    (lower-case names) and body."""
    address = urllib.parse.urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(data)
        if hang_up:
            sock.shutdown(socket.SHUT_WR)
        return wire.answer(sock)


def post(path: str, body: bytes, length: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\nConnection: close\r\n\r\n".encode()
        + body
    )


def test_gunicorn_answers_bad_framing_as_the_built_in_server_does(gunicorn):
    """docs/api.md, "Bad input": the application's answers, in the API's format."""
    cases = [
        (post("/v1/continue", b"{}", str(64 * 1024 * 1024 + 1)), False, 413),
        (post("/v1/rules", b"{}", "9" * 24), False, 400),
        (post("/v1/rules", b'{"a":1', "100"), True, 400),  # stops short of its length
    ]
    for data, hang_up, status in cases:
        got, headers, body = raw(gunicorn, data, hang_up=hang_up)
        assert got == status, body
        assert headers["content-type"] == "application/json"
        assert headers["x-openstack-request-id"].startswith("req-")
        assert headers["x-openstack-ironic-inspector-api-maximum-version"] == "1.19"
        assert json.loads(body)["error"]["message"]
    # Refused by gunicorn itself, before the application: its own page (as documented).
    twice = post("/v1/rules", b"{}x", "2").replace(b"\r\n\r\n", b"\r\nContent-Length: 3\r\n\r\n")
    assert raw(gunicorn, twice)[0] == 400
