"""Private Ironics for the tests (a helper, not a test), started by scripts/services, as
CI's own, in a directory and on a port of their own: one for the firewall tests that need
Ironic's notifications, sent to the test RabbitMQ on a topic of its own, so that only its
tests hear them; one whose fake power is slow, for the tests that kill it mid-action.
Built-in inspection (the agent inspect interface) on fake hardware: `inspect` takes a
manageable node to `inspect wait`, the ramdisk's post to /v1/continue_inspection back to
`manageable`.
"""

import contextlib
import os
import pathlib
import signal
import subprocess
import time
import urllib.parse
import uuid
from collections.abc import Iterator

import kombu

from tests.conftest import service_unavailable
from tests.integration.cluster import ROOT, free_port

SERVICES = ROOT / "scripts" / "services"
IRONIC_VENV = ROOT / ".services" / "ironic-venv" / "bin"
#: The microversion of /v1/continue_inspection (the ramdisk's post to Ironic itself).
CONTINUE_INSPECTION_VERSION = "1.84"


def rabbit_url(amqp_url: str) -> str:
    """oslo.messaging's URL of the broker of an amqp:// URL."""
    return "rabbit://" + amqp_url.split("://", 1)[1]


def delete_queues(url: str, names: list[str]) -> None:
    with kombu.Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        for name in names:
            channel.queue_delete(name)


def _services(action: str, environment: dict[str, str]) -> None:
    result = subprocess.run(
        [str(SERVICES), action, "ironic"],
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, f"scripts/services {action} ironic:\n{result.stderr}"


@contextlib.contextmanager
def notifying_ironic(rabbitmq_url: str, directory: pathlib.Path) -> Iterator[tuple[str, str]]:
    """A started private Ironic: (its URL, the topic of its notifications); stopped after,
    with the queue oslo.messaging keeps its unread notifications in."""
    if not (IRONIC_VENV / "ironic").exists():
        service_unavailable(f"{IRONIC_VENV}/ironic missing: scripts/services start ironic")
    port, topic = free_port(), f"ironic_test_{uuid.uuid4().hex[:8]}"
    environment = {
        "INSPECTOR_IRONIC_DIR": str(directory / "ironic"),
        "INSPECTOR_IRONIC_PORT": str(port),
        "INSPECTOR_IRONIC_NOTIFICATIONS_TOPIC": topic,
        # To the tests' RabbitMQ, whoever started it (by default, only to the checkout's own).
        "INSPECTOR_IRONIC_NOTIFICATIONS": "yes",
        "INSPECTOR_RABBITMQ_PORT": str(urllib.parse.urlsplit(rabbitmq_url).port or 5672),
    }
    _services("start", environment)
    try:
        yield f"http://127.0.0.1:{port}", topic
    finally:
        _services("stop", environment)
        delete_queues(rabbitmq_url, [f"{topic}.info"])


class PowerLab:
    """A private Ironic whose fake power driver takes `power_delay` seconds a call (a power
    action stays pending about twice that: Ironic reads the power state first), without
    notifications; killed with SIGKILL and started again on the same port and database."""

    def __init__(self, directory: pathlib.Path, power_delay: float) -> None:
        if not (IRONIC_VENV / "ironic").exists():
            service_unavailable(f"{IRONIC_VENV}/ironic missing: scripts/services start ironic")
        self.directory = directory / "ironic"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.environment = {
            "INSPECTOR_IRONIC_DIR": str(self.directory),
            "INSPECTOR_IRONIC_PORT": str(self.port),
            "INSPECTOR_IRONIC_NOTIFICATIONS": "no",
            "INSPECTOR_IRONIC_POWER_DELAY": str(power_delay),
        }

    def start(self) -> None:
        _services("start", self.environment)

    def stop(self) -> None:
        _services("stop", self.environment)

    def kill(self) -> None:
        """SIGKILL to its process group (its pidfile names the leader), as a crash would:
        the conductor's locks and pending power actions stay in its database."""
        pid = int(pathlib.Path(f"{self.directory}.pid").read_text())
        os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _group_alive(pid):
            assert time.monotonic() < deadline, f"Ironic's group {pid} survived SIGKILL"
            time.sleep(0.05)  # polling the group's end with a deadline

    def log(self) -> str:
        return (self.directory / "ironic.log").read_text(errors="replace")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
