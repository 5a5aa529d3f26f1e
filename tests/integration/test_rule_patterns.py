"""A rule whose pattern is catastrophic for Python's backtracking `re` freezes nothing: one
`inspector all` process (API and workers, SQLite, in-process queue) against the real
Ironic processes two nodes at once and answers `GET /` quickly throughout."""

import contextlib
import pathlib
import signal
import subprocess
import time

import pytest
import requests

from tests.integration.cluster import (
    INSPECTOR,
    ROOT,
    free_port,
    ipa_payload,
    macs,
    post_continue,
    render_config,
    start,
    wait_for,
)

pytestmark = pytest.mark.integration

#: What the rule's field holds on node A: `(a+)+$` backtracks on it for ever in `re`.
CATASTROPHIC = "a" * 100_000 + "b"
#: [processing] rules_evaluation_timeout of the process.
BOUND = 5.0
#: Slowest answer to GET / the test accepts (a frozen process does not answer at all).
QUICK = 2.0

RULE = {
    "description": "serial checked with a catastrophic pattern",
    "conditions": [
        {
            "op": "matches",
            "field": "inventory.system_vendor.serial_number",
            "value": "(a+)+$",
            "invert": True,
        }
    ],
    "actions": [{"action": "add-trait", "name": "CUSTOM_SERIAL_CHECKED"}],
}


class AllInOne:
    """`inspector all` as a child process, with the url and logs() the helpers use."""

    def __init__(self, popen: subprocess.Popen, port: int, log_path: pathlib.Path) -> None:
        self.popen = popen
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-20_000:]


@contextlib.contextmanager
def inspector_all(tmp_path: pathlib.Path, ironic_url: str, database_url: str | None = None):
    """`inspector all` on SQLite under tmp_path, or on `database_url`."""
    port = free_port()
    config = tmp_path / "inspector.conf"
    database = {"database": {"connection": database_url}} if database_url else {}
    config.write_text(
        render_config(
            {
                **database,
                "DEFAULT": {
                    "state_path": tmp_path / "state",
                    "listen_address": "127.0.0.1",
                    "listen_port": port,
                },
                "ironic": {
                    "auth_type": "none",
                    "endpoint_override": ironic_url,
                    "max_retries": 3,
                    "retry_interval": 0.5,
                },
                "processing": {"store_data": "database", "rules_evaluation_timeout": BOUND},
                "worker": {"pool_size": 2, "get_timeout": 0.5},
            }
        )
    )
    log_path = tmp_path / "all.log"
    with open(log_path, "w") as log:
        popen = subprocess.Popen(
            [*INSPECTOR, "all", "--config-file", str(config)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        process = AllInOne(popen, port, log_path)
        try:
            wait_for(
                lambda: popen.poll() is None and answer_time(process) is not None,
                timeout=30,
                message=lambda: f"inspector all answering GET /\n{process.logs()}",
            )
            yield process
        finally:
            if popen.poll() is None:
                popen.kill()
                popen.wait()
            print(process.logs())  # shown by pytest when the test failed


def answer_time(process: AllInOne) -> float | None:
    """Seconds GET / took to answer 200; None when it did not answer within QUICK."""
    started = time.monotonic()
    try:
        response = requests.get(process.url + "/", timeout=QUICK)
    except requests.RequestException:
        return None
    return time.monotonic() - started if response.status_code == 200 else None


def test_catastrophic_rule_freezes_nothing(tmp_path, ironic_url, ironic_api):
    with inspector_all(tmp_path, ironic_url) as process:
        created = requests.post(f"{process.url}/v1/rules", json=RULE, timeout=10)
        assert created.status_code == 201, created.text
        node_a, node_b = ironic_api.enroll()["uuid"], ironic_api.enroll()["uuid"]
        start(process, node_a)
        start(process, node_b)
        payload_a = ipa_payload(macs(ironic_api, node_a))
        payload_a["inventory"]["system_vendor"]["serial_number"] = CATASTROPHIC
        payload_b = ipa_payload(macs(ironic_api, node_b))
        payload_b["inventory"]["system_vendor"]["serial_number"] = "CZ1234ABCD"
        assert post_continue(process, payload_a).json() == {"uuid": node_a}
        assert post_continue(process, payload_b).json() == {"uuid": node_b}

        # Both introspections end, within the bound; GET / answers quickly all along.
        slowest = 0.0
        deadline = time.monotonic() + BOUND + 30
        while True:
            took = answer_time(process)
            assert took is not None, f"GET / unanswered within {QUICK} s\n{process.logs()}"
            slowest = max(slowest, took)
            states = [
                requests.get(f"{process.url}/v1/introspection/{node}", timeout=QUICK).json()
                for node in (node_a, node_b)
            ]
            if all(state["finished"] for state in states):
                break
            assert time.monotonic() < deadline, f"{states}\n{process.logs()}"
            time.sleep(0.05)  # polling with a deadline, not a fixed wait
        assert slowest < QUICK
        final_a, final_b = states
        assert final_a["state"] == "finished", final_a
        assert final_b["state"] == "finished", final_b
        for node in (node_a, node_b):
            traits = ironic_api.request("GET", f"/nodes/{node}/traits")["traits"]
            assert "CUSTOM_SERIAL_CHECKED" in traits  # the rule ran on both, to its end

        # A process whose workers are free stops on SIGTERM.
        process.popen.send_signal(signal.SIGTERM)
        assert process.popen.wait(timeout=30) == 0
