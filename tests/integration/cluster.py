"""A deployment of real inspector processes for integration tests (a helper, not a test).

`Deployment` writes one configuration file, runs `inspector db upgrade`, starts N
`inspector api` processes (each on its own free port, through a second configuration file
that only sets the port) and M `inspector worker` processes, each with its own log file
under the test's tmp_path, waits until every API answers `GET /`, and stops them all:
SIGTERM, then SIGKILL after a deadline. On stop it prints the tail of every log, which
pytest shows for a failed test.
"""

import contextlib
import copy
import dataclasses
import json
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import requests
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests import fixtures

ROOT = pathlib.Path(__file__).parents[2]
INSPECTOR = [sys.executable, "-m", "inspector.cmd"]
#: The real ironic-python-agent payloads (tests/fixtures/README.md says where they come from).
IPA_PAYLOAD = fixtures.IPA
IPA_ERROR_PAYLOAD = fixtures.IPA_DMIDECODE_ERROR

#: Seconds a process gets to answer after it was started.
START_TIMEOUT = 30.0
#: What a worker logs once its backends are open and its pool runs.
POOL_STARTED = "Worker pool of"
#: Seconds a process gets to leave after SIGTERM before it is killed.
STOP_TIMEOUT = 15.0
#: Lines of each log printed when the deployment stops.
LOG_TAIL = 60

T = TypeVar("T")


def free_port() -> int:
    """A TCP port nothing listens on at the moment (on 127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(
    predicate: Callable[[], T],
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str | Callable[[], str] = "condition",
) -> T:
    """The first truthy result of predicate(); AssertionError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"{text}: not met within {timeout} s")
        time.sleep(interval)  # polling a condition with a deadline, not a fixed wait


def ipa_payload(macs: Iterable[str], fixture: pathlib.Path = IPA_PAYLOAD) -> dict[str, Any]:
    """A real ironic-python-agent payload whose interfaces carry these MACs (the node's
    ports in Ironic), in order; interfaces beyond the MACs given are dropped."""
    data = json.loads(fixture.read_text())
    interfaces = data["inventory"]["interfaces"]
    rewritten = []
    for index, mac in enumerate(macs):
        interface = copy.deepcopy(interfaces[min(index, len(interfaces) - 1)])
        if index >= len(interfaces):
            interface["name"] = f"eth{index}"
        interface["mac_address"] = mac
        rewritten.append(interface)
    data["inventory"]["interfaces"] = rewritten
    if data.get("boot_interface") and rewritten:
        data["boot_interface"] = rewritten[0]["mac_address"]
    return data


def render_config(sections: dict[str, dict[str, Any]]) -> str:
    """An oslo.config INI file: booleans as true/false, lists comma-separated."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for name, value in options.items():
            text = value
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, list | tuple):
                text = ",".join(str(v) for v in value)
            lines.append(f"{name} = {text}")
        lines.append("")
    return "\n".join(lines)


def coordination_url(redis_url: str, namespace: str | None = None) -> str:
    """tooz's URL for the Redis server of redis_url (redis://host:port/0 -> ...?timeout=5),
    in its own key namespace when given (so that deployments never share groups)."""
    base = redis_url.split("://", 1)[1].split("/", 1)[0]
    suffix = f"&namespace={namespace}" if namespace else ""
    return f"redis://{base}?timeout=5{suffix}"


@dataclasses.dataclass
class Process:
    """One inspector process of the deployment."""

    role: str
    index: int
    popen: subprocess.Popen
    log_path: pathlib.Path
    port: int | None = None

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}"

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def url(self) -> str:
        assert self.port is not None, f"{self.name} serves no HTTP"
        return f"http://127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM, then SIGKILL after timeout seconds; the exit status."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()


class Deployment:
    """Inspector API and worker processes sharing one database, queue and DLM.

    `options` ({section: {option: value}}) is merged over the defaults below.
    """

    def __init__(
        self,
        tmp_path: pathlib.Path,
        *,
        database_url: str,
        queue_url: str,
        queue_name: str,
        redis_url: str,
        ironic_url: str,
        options: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.database_url = database_url
        self.sections: dict[str, dict[str, Any]] = {
            "DEFAULT": {
                "auth_strategy": "noauth",
                "state_path": tmp_path / "state",
                "listen_address": "127.0.0.1",
                "listen_port": free_port(),
            },
            "database": {"connection": database_url},
            "queue": {"transport_url": queue_url, "queue_name": queue_name},
            "coordination": {
                "backend_url": coordination_url(redis_url, f"test-{uuid.uuid4().hex[:12]}")
            },
            "ironic": {
                "auth_type": "none",
                "endpoint_override": ironic_url,
                "max_retries": 3,
                "retry_interval": 0.5,
            },
            "processing": {"store_data": "database"},
            "worker": {"get_timeout": 0.5},
            # The PXE firewalls' channel of this deployment alone: tests run side by side
            # on one broker, and `inspector status` counts the hosts that answer on it.
            "firewall": {"channel_topic": f"inspector_firewall_{uuid.uuid4().hex[:8]}"},
        }
        for section, values in (options or {}).items():
            self.sections.setdefault(section, {}).update(values)
        self.config_path = tmp_path / "inspector.conf"
        self.processes: list[Process] = []
        self._logs: list[Any] = []
        self.write_config()

    # ------------------------------------------------------------------ setup

    def write_config(self) -> pathlib.Path:
        self.config_path.write_text(render_config(self.sections))
        return self.config_path

    def run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """`inspector ARGS --config-file <ours>`, to completion."""
        return subprocess.run(
            [*INSPECTOR, *args, "--config-file", str(self.config_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def upgrade(self) -> None:
        result = self.run("db", "upgrade")
        assert result.returncode == 0, f"db upgrade failed:\n{result.stdout}\n{result.stderr}"

    # ------------------------------------------------------------------ processes

    @property
    def apis(self) -> list[Process]:
        return [p for p in self.processes if p.role == "api"]

    @property
    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.role == "worker"]

    @property
    def url(self) -> str:
        """The first API's URL."""
        return self.apis[0].url

    def _spawn(self, role: str, args: list[str], port: int | None = None) -> Process:
        index = sum(1 for p in self.processes if p.role == role)
        log_path = self.tmp_path / f"{role}-{index}.log"
        log = open(log_path, "w")  # closed in stop()
        self._logs.append(log)
        popen = subprocess.Popen(
            args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        process = Process(role, index, popen, log_path, port)
        self.processes.append(process)
        return process

    def start_api(self, wait: bool = True) -> Process:
        """`inspector api` on a port of its own (a second file overrides listen_port)."""
        port = free_port()
        index = len(self.apis)
        port_config = self.tmp_path / f"api-{index}.conf"
        port_config.write_text(render_config({"DEFAULT": {"listen_port": port}}))
        args = [*INSPECTOR, "api", "--config-file", str(self.config_path)]
        process = self._spawn("api", [*args, "--config-file", str(port_config)], port)
        if wait:
            self.wait_ready(process)
        return process

    def start_worker(self) -> Process:
        return self._spawn("worker", [*INSPECTOR, "worker", "--config-file", str(self.config_path)])

    def start(self, apis: int = 1, workers: int = 1) -> "Deployment":
        """db upgrade, then the processes; returns once every API answers GET /."""
        self.upgrade()
        started = [self.start_api(wait=False) for _ in range(apis)]
        for _ in range(workers):
            self.start_worker()
        for process in started:
            self.wait_ready(process)
        return self

    def wait_workers(self, timeout: float = START_TIMEOUT) -> None:
        """Until every worker runs its pool: its backends are open, its start-up over."""
        for worker in self.workers:

            def running(worker: Process = worker) -> bool:
                if not worker.alive():
                    raise AssertionError(f"{worker.name} exited:\n{worker.log_text()}")
                return POOL_STARTED in worker.log_text()

            wait_for(running, timeout, message=lambda w=worker: f"{w.name} started\n{w.log_text()}")

    def wait_ready(self, process: Process, timeout: float = START_TIMEOUT) -> None:
        """Until the API answers GET / with 200; fails early when the process exits."""

        def answers() -> bool:
            if not process.alive():
                raise AssertionError(
                    f"{process.name} exited with {process.popen.returncode}:\n" + process.log_text()
                )
            try:
                return requests.get(process.url + "/", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        wait_for(
            answers,
            timeout,
            message=lambda: f"{process.name} answering GET /\n{process.log_text()}",
        )

    def check_alive(self) -> None:
        """Fail with the logs when one of the processes exited."""
        dead = [p for p in self.processes if not p.alive()]
        assert not dead, "\n".join(
            f"{p.name} exited with {p.popen.returncode}:\n{p.log_text()}" for p in dead
        )

    def logs(self, lines: int = LOG_TAIL) -> str:
        """The last lines of every process's log."""
        parts = []
        for process in self.processes:
            tail = process.log_text().splitlines()[-lines:]
            parts.append(f"----- {process.name} (pid {process.pid}) {process.log_path}")
            parts.extend(tail)
        return "\n".join(parts)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM to every process, then SIGKILL to those still there after timeout."""
        for process in self.processes:
            if process.alive():
                process.popen.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
        for log in self._logs:
            log.close()
        self._logs.clear()
        print(self.logs())  # shown by pytest when the test failed

    def __enter__(self) -> "Deployment":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def scratch_database(admin: Engine) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database on admin's server, dropped afterwards
    (the `postgresql_url` fixture's work, for fixtures wider than one test)."""
    name = f"inspector_test_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield admin.url.set(database=name).render_as_string(hide_password=False)
    finally:
        from tests.conftest import drop_database  # noqa: PLC0415 - as delete_queues below

        drop_database(admin, name)


@contextlib.contextmanager
def running_deployment(
    tmp_path: pathlib.Path,
    admin: Engine,
    *,
    queue_url: str,
    redis_url: str,
    ironic_url: str,
    apis: int = 1,
    workers: int = 1,
    options: dict[str, dict[str, Any]] | None = None,
) -> Iterator[Deployment]:
    """A started Deployment on a scratch database and its own queue; all removed after."""
    from tests.conftest import delete_queues  # noqa: PLC0415 - conftest imports nothing here

    queue_name = f"test-{uuid.uuid4().hex[:12]}"
    with scratch_database(admin) as database_url:
        cluster = Deployment(
            tmp_path,
            database_url=database_url,
            queue_url=queue_url,
            queue_name=queue_name,
            redis_url=redis_url,
            ironic_url=ironic_url,
            options=options,
        )
        try:
            cluster.start(apis=apis, workers=workers)
            yield cluster
        finally:
            cluster.stop()
            delete_queues(queue_url, queue_name)


# ---------------------------------------------------------------- API helpers


def status(deployment, node):
    return requests.get(f"{deployment.url}/v1/introspection/{node}", timeout=10).json()


def wait_state(deployment, node, state, timeout=60):
    return wait_for(
        lambda: (s := status(deployment, node)).get("state") == state and s,
        timeout=timeout,
        message=lambda: f"{node} in {state}: {status(deployment, node)}\n{deployment.logs()}",
    )


def start(deployment, node, **params):
    answer = requests.post(f"{deployment.url}/v1/introspection/{node}", params=params, timeout=10)
    assert answer.status_code == 202, answer.text
    return wait_state(deployment, node, "waiting")


def post_continue(deployment, payload):
    return requests.post(f"{deployment.url}/v1/continue", json=payload, timeout=10)


def macs(ironic_api, node):
    return [port["address"] for port in ironic_api.node_ports(node)]
