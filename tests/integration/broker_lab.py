"""Private brokers that a test may restart (a helper, not a test): a RabbitMQ node or a
Redis server started by scripts/services, as CI's own, on a port, in a directory and (for
RabbitMQ) under a node name of their own, so that stopping them never touches the
brokers the other tests share.
"""

import contextlib
import dataclasses
import os
import pathlib
import random
import socket
import subprocess
import uuid
from collections.abc import Iterator

from tests.conftest import service_unavailable
from tests.integration.cluster import ROOT, free_port

SERVICES = ROOT / "scripts" / "services"
RABBITMQ_SERVER = pathlib.Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
#: Seconds scripts/services may take to start or stop a broker.
SERVICES_TIMEOUT = 120
#: scripts/services puts RabbitMQ's distribution port this far above its AMQP port.
DIST_PORT_OFFSET = 20000


@dataclasses.dataclass
class PrivateBroker:
    """A started broker: its URL, and how to stop and start it again."""

    service: str
    url: str
    environment: dict[str, str]

    def run(self, action: str) -> None:
        result = subprocess.run(
            [str(SERVICES), action, self.service],
            env={**os.environ, **self.environment},
            capture_output=True,
            text=True,
            timeout=SERVICES_TIMEOUT,
            check=False,
        )
        assert result.returncode == 0, f"scripts/services {action} {self.service}:\n{result.stderr}"

    def stop(self) -> None:
        self.run("stop")

    def start(self) -> None:
        self.run("start")


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _rabbitmq_port() -> int:
    """A free AMQP port below the ephemeral range whose distribution port (20000 above)
    is free too."""
    while True:
        port = random.randrange(20000, 30000)
        if _is_free(port) and _is_free(port + DIST_PORT_OFFSET):
            return port


@contextlib.contextmanager
def private_broker(service: str, directory: pathlib.Path) -> Iterator[PrivateBroker]:
    """A started private `rabbitmq` or `redis` under directory; stopped afterwards."""
    if service == "rabbitmq":
        if not RABBITMQ_SERVER.exists():
            service_unavailable(f"{RABBITMQ_SERVER} missing: scripts/services start rabbitmq")
        port = _rabbitmq_port()
        environment = {
            "INSPECTOR_RABBITMQ_PORT": str(port),
            "INSPECTOR_RABBITMQ_DIR": str(directory / "rabbitmq"),
            "INSPECTOR_RABBITMQ_NODE": f"inspector-{uuid.uuid4().hex[:8]}@localhost",
        }
        url = f"amqp://inspector:inspector@127.0.0.1:{port}//"
    else:
        port = free_port()
        environment = {
            "INSPECTOR_REDIS_PORT": str(port),
            "INSPECTOR_REDIS_DIR": str(directory / "redis"),
        }
        url = f"redis://127.0.0.1:{port}/0"
    broker = PrivateBroker(service, url, environment)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
