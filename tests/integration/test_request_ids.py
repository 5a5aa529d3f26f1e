"""One introspection followed by its request id, as an operator greps for it: `inspector
all` (oslo.log, its default context format, a log file) against the real Ironic, started
with a global request id. The id is in the API's line for the start, in the worker's
lines for the node, and in Ironic's own log for the calls made for it (Ironic's
oslo.middleware takes X-OpenStack-Request-ID as the global request id of its lines)."""

import os
import pathlib
import signal
import subprocess
import uuid

import pytest
import requests

from tests.conftest import service_unavailable
from tests.integration.cluster import INSPECTOR, ROOT, free_port, render_config, wait_for

pytestmark = pytest.mark.integration

#: Where the test Ironic logs (scripts/services env exports it).
IRONIC_LOG_ENV = "INSPECTOR_TEST_IRONIC_LOG"


@pytest.fixture
def ironic_log() -> pathlib.Path:
    path = os.environ.get(IRONIC_LOG_ENV)
    if not path or not pathlib.Path(path).is_file():
        service_unavailable(
            f"{IRONIC_LOG_ENV} does not name Ironic's log file: scripts/services start "
            'ironic, then eval "$(scripts/services env)"'
        )
    return pathlib.Path(path)


@pytest.fixture
def service(tmp_path, ironic_url):
    port = free_port()
    log_file = tmp_path / "inspector.log"
    config = tmp_path / "inspector.conf"
    config.write_text(
        render_config(
            {
                "DEFAULT": {
                    "debug": True,
                    "log_dir": tmp_path,
                    "log_file": log_file.name,
                    "state_path": tmp_path / "state",
                    "listen_address": "127.0.0.1",
                    "listen_port": port,
                },
                "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
                "worker": {"get_timeout": 0.5},
            }
        )
    )
    output = tmp_path / "output"
    with open(output, "w") as out:
        process = subprocess.Popen(
            [*INSPECTOR, "all", "--config-file", str(config)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}"

    def tail() -> str:
        return "\n".join(p.read_text()[-4000:] for p in (output, log_file) if p.exists())

    def answers() -> bool:
        assert process.poll() is None, tail()
        try:
            return requests.get(url, timeout=2).ok
        except requests.ConnectionError:
            return False

    try:
        wait_for(answers, 30, message=lambda: f"inspector all answers\n{tail()}")
        yield url, log_file
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_one_introspection_is_followed_by_its_request_id(service, ironic_api, ironic_log):
    url, log_file = service
    node = ironic_api.enroll()["uuid"]
    global_id = f"req-{uuid.uuid4()}"
    answer = requests.post(
        f"{url}/v1/introspection/{node}",
        headers={"X-OpenStack-Request-ID": global_id},
        timeout=10,
    )
    assert answer.status_code == 202, answer.text
    own_id = answer.headers["X-OpenStack-Request-Id"]
    assert own_id.startswith("req-") and own_id != global_id

    def state() -> str:
        return requests.get(f"{url}/v1/introspection/{node}", timeout=10).json()["state"]

    wait_for(lambda: state() == "waiting", 60, message=lambda: f"{node} waiting: {state()}")

    # Ours: the API's line for the start, the worker's for the node, all under the id.
    lines = log_file.read_text().splitlines()
    ours = [line for line in lines if global_id in line]
    [api] = [line for line in ours if "-> starting (API)" in line]
    assert f" inspector.commit [{global_id} {own_id} " in api
    assert f"[node {node}] " in api  # the log context's node
    worker = [line for line in ours if " inspector.worker." in line]
    assert worker, "\n".join(lines[-40:])
    assert all(node in line for line in worker)
    # Every worker line about the node's start shows the id (the wait follow-up too).
    starts = [line for line in lines if f"[node {node} req {global_id} " in line]
    assert starts and all(global_id in line for line in starts)

    # Ironic's: its request log lines for the calls made for this introspection.
    def ironic_lines() -> list[str]:
        return [line for line in ironic_log.read_text().splitlines() if global_id in line]

    calls = [
        f"GET /v1/nodes/{node} ",  # the API's read of the node for the start
        f"PUT /v1/nodes/{node}/management/boot_device ",  # the worker's
        f"PUT /v1/nodes/{node}/states/power ",
    ]
    wait_for(
        lambda: all(any(call in line for line in ironic_lines()) for call in calls),
        10,
        message=lambda: "Ironic's lines for the id:\n" + "\n".join(ironic_lines()),
    )
    for line in ironic_lines():
        assert f"[{global_id} req-" in line  # Ironic's global request id, then its own
