"""What `inspector all` writes to its log file, with debug on, while introspections fail
in every way that once put data in a line (a rule whose failing message formats the whole
data and node, a format spec error, a ramdisk error quoting a credential, a refused and
an unreadable `logs` field, a lookup failure): no credential and no ramdisk log, on any
line. Real processes, the real Ironic, real ironic-python-agent payloads."""

import base64
import pathlib
import signal
import subprocess

import pytest
import requests

from tests.integration.cluster import (
    INSPECTOR,
    ROOT,
    free_port,
    ipa_payload,
    macs,
    render_config,
    wait_for,
)

pytestmark = pytest.mark.integration

#: Each secret appears once, in one place, so that a leak says where it came from.
SECRETS = {
    "driver_info": "IronicIpmiPw-7f3a9c",
    "auth_token": "AuthToken-3e8d5a",
    "bmc_password": "TopBmcPw-51d0e2",
    "client_secret": "ClientSecret-90aa3d",
    "inventory_bmc_password": "InvBmcPw-8c44b7",
    "snmp_auth_key": "SnmpAuthKey-2b6f1e",
    "ramdisk_error": "RamdiskErrPw-6e21c8",
}
#: The ramdisk's logs: base64 of text with a marker, long as real ones are.
LOG_MARKER = "RAMDISK-LOG-MARKER-4f1d"
LOGS = base64.b64encode(f"{LOG_MARKER} dmesg line\n".encode() * 200).decode()
#: A `logs` field the API refuses (a list), and one that is no base64.
REFUSED_LOGS_MARKER = "REFUSED-LOGS-MARKER-c93e"
UNREADABLE_LOGS_MARKER = "UNREADABLE-LOGS-MARKER-0d7b"


def forbidden() -> list[str]:
    """Every string no line may hold: the secrets, the markers, pieces of the base64."""
    pieces = [LOGS[i : i + 24] for i in range(0, len(LOGS) - 24, 500)]
    return [*SECRETS.values(), LOG_MARKER, REFUSED_LOGS_MARKER, UNREADABLE_LOGS_MARKER, *pieces]


class Service:
    """`inspector all` with debug on and a log file, against the real Ironic."""

    def __init__(self, tmp_path: pathlib.Path, ironic_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = tmp_path / "inspector.log"
        self.logs_dir = tmp_path / "ramdisk-logs"
        self.config = tmp_path / "inspector.conf"
        self.config.write_text(
            render_config(
                {
                    "DEFAULT": {
                        "debug": True,
                        "log_file": self.log_file,
                        "state_path": tmp_path / "state",
                        "listen_address": "127.0.0.1",
                        "listen_port": self.port,
                    },
                    "ironic": {
                        "auth_type": "none",
                        "endpoint_override": ironic_url,
                        "max_retries": 3,
                        "retry_interval": 0.5,
                    },
                    "processing": {
                        "store_data": "database",
                        "ramdisk_logs_dir": self.logs_dir,
                        "always_store_ramdisk_logs": True,
                    },
                    "worker": {"get_timeout": 0.5},
                }
            )
        )
        self.output = tmp_path / "output"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.output, "w") as output:
            self.process = subprocess.Popen(
                [*INSPECTOR, "all", "--config-file", str(self.config)],
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        wait_for(self._answers, 30, message=lambda: f"inspector all answers\n{self._tail()}")

    def _answers(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self._tail()
        try:
            return requests.get(self.url, timeout=2).ok
        except requests.ConnectionError:
            return False

    def _tail(self) -> str:
        texts = [p.read_text() for p in (self.output, self.log_file) if p.exists()]
        return "\n".join(text[-4000:] for text in texts)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def state(self, node: str) -> dict:
        return requests.get(f"{self.url}/v1/introspection/{node}", timeout=10).json()

    def wait_state(self, node: str, state: str) -> dict:
        return wait_for(
            lambda: (s := self.state(node)).get("state") == state and s,
            60,
            message=lambda: f"{node} in {state}: {self.state(node)}\n{self._tail()}",
        )

    def introspect(self, node: str) -> None:
        answer = requests.post(f"{self.url}/v1/introspection/{node}", timeout=10)
        assert answer.status_code == 202, answer.text
        self.wait_state(node, "waiting")

    def post(self, payload: dict) -> requests.Response:
        return requests.post(f"{self.url}/v1/continue", json=payload, timeout=10)

    def rule(self, scope: str, action: dict) -> None:
        body = {"description": f"fails {scope}", "scope": scope, "actions": [action]}
        answer = requests.post(f"{self.url}/v1/rules", json=body, timeout=10)
        assert answer.status_code == 201, answer.text


@pytest.fixture
def service(tmp_path, ironic_url):
    running = Service(tmp_path, ironic_url)
    try:
        running.start()
        yield running
    finally:
        running.stop()


def enroll(ironic_api, scope: str) -> str:
    driver_info = {
        "ipmi_address": "192.0.2.10",
        "ipmi_username": "admin",
        "ipmi_password": SECRETS["driver_info"],
    }
    node = ironic_api.enroll(properties={"inspection_scope": scope}, driver_info=driver_info)
    return node["uuid"]


def secret_payload(ironic_api, node: str) -> dict:
    """A real payload for the node, carrying credentials in several places and ramdisk
    logs. The top-level ones sort first (the data is stored with sorted keys): a message
    quoting the data from its start quotes them."""
    payload = ipa_payload(macs(ironic_api, node))
    payload["inventory"]["bmc_password"] = SECRETS["inventory_bmc_password"]
    payload["inventory"]["snmp_auth_key"] = SECRETS["snmp_auth_key"]
    top = {name: SECRETS[name] for name in ("auth_token", "bmc_password", "client_secret")}
    return {**top, **payload, "logs": LOGS}


def test_no_line_of_the_log_holds_a_secret_or_ramdisk_logs(service, ironic_api):
    # 1. A rule whose failing action's message is the whole data and the whole node.
    service.rule("dump", {"action": "fail", "message": "dump: {data} node: {node}"})
    dumped = enroll(ironic_api, "dump")
    service.introspect(dumped)
    assert service.post(secret_payload(ironic_api, dumped)).status_code == 200
    error = service.wait_state(dumped, "error")["error"]
    assert SECRETS["bmc_password"] in error  # the node's error, for its API: whole

    # 2. A format spec that would have been the whole data is refused at creation now;
    # one that fails only on the data (a spec a dict cannot take) fails at run time.
    refused = requests.post(
        f"{service.url}/v1/rules",
        json={
            "scope": "spec",
            "actions": [{"action": "set-attribute", "path": "/extra/x", "value": "{data:{data}}"}],
        },
        timeout=10,
    )
    assert refused.status_code == 400, refused.text
    service.rule("spec", {"action": "set-attribute", "path": "/extra/x", "value": "{data:>5}"})
    spec = enroll(ironic_api, "spec")
    service.introspect(spec)
    assert service.post(secret_payload(ironic_api, spec)).status_code == 200
    assert "format" in service.wait_state(spec, "error")["error"]

    # 3. The ramdisk reports an error quoting a credential; its logs are stored, not logged.
    failed = enroll(ironic_api, "none")
    service.introspect(failed)
    payload = secret_payload(ironic_api, failed)
    payload["error"] = f"cannot talk to the BMC with ipmi_password={SECRETS['ramdisk_error']}"
    assert service.post(payload).status_code == 400
    service.wait_state(failed, "error")
    stored = wait_for(lambda: list(service.logs_dir.iterdir()), 10, message="stored logs")
    assert LOG_MARKER.encode() in stored[0].read_bytes()  # the logs did reach the service

    # 4. A `logs` field of the wrong type (refused), one that is no base64 (not stored).
    refused = secret_payload(ironic_api, failed)
    refused["logs"] = [REFUSED_LOGS_MARKER * 20]
    assert service.post(refused).status_code == 400
    unreadable = enroll(ironic_api, "none")
    service.introspect(unreadable)
    payload = secret_payload(ironic_api, unreadable)
    payload["logs"] = f"{UNREADABLE_LOGS_MARKER} is no base64 ~~~"
    payload["error"] = "disk on fire"
    assert service.post(payload).status_code == 400

    # 5. A lookup failure: no node has these MACs.
    unknown = secret_payload(ironic_api, failed)
    for interface in unknown["inventory"]["interfaces"]:
        interface["mac_address"] = ironic_api.new_mac()
    unknown["boot_interface"] = unknown["inventory"]["interfaces"][0]["mac_address"]
    assert service.post(unknown).status_code == 404

    service.stop()
    assert service.process.returncode == 0
    text = service.log_file.read_text()
    lines = text.splitlines()
    leaks = [
        (number, piece, line[:200])
        for number, line in enumerate(lines, 1)
        for piece in forbidden()
        if piece in line
    ]
    assert leaks == []
    # What failed was logged, at debug with its stack: the test looked at real lines.
    assert any(f"[node {dumped} " in line and "task failed: " in line for line in lines)
    assert any(f"[node {spec} " in line and "task failed: " in line for line in lines)
    assert "Traceback (most recent call last)" in text
    # The dump reached the log, masked.
    assert "{'auth_token': '***', 'bmc_password': '***', 'boot_interface'" in text
    assert "'client_secret': '***'" in text
    assert "ipmi_password=***" in text  # the ramdisk's error too
    assert "Could not find a node" in text
    # Also what the process wrote outside its log file (stdout and stderr).
    output = service.output.read_text()
    assert [piece for piece in forbidden() if piece in output] == []
