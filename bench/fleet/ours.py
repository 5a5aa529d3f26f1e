"""Our service as the fleet benchmark runs it: one `inspector api` and N `inspector worker`
processes on a fresh PostgreSQL database, RabbitMQ (or Redis) and Redis for the DLM,
talking to Ironic through the counting proxy; each worker serves its metrics, read for
the time spent in each backend.

Configured as an operator would, defaults kept except: noauth, `store_data = database`,
the worker pool size, the introspection timeout at ironic-inspector's 3600 s, and no
per-source limit on /v1/continue (all simulated ramdisks post from 127.0.0.1).
"""

import contextlib
import dataclasses
import pathlib
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import requests

from bench.fleet.peer import free_port, render_config
from bench.worker import delete_queues

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSPECTOR = [sys.executable, "-m", "inspector.cmd"]
#: Seconds a process gets to answer after start, and to leave after SIGTERM.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
BACKEND_METRIC = re.compile(
    r'^inspector_worker_backend_seconds_total\{backend="(?P<backend>[^"]+)"\} (?P<value>\S+)$',
    re.MULTILINE,
)


@dataclasses.dataclass
class Ours:
    """The running deployment."""

    workdir: pathlib.Path
    config: pathlib.Path
    url: str
    api: subprocess.Popen
    workers: list[tuple[subprocess.Popen, int]]  # (process, metrics port)
    _logs: list = dataclasses.field(default_factory=list)

    def pids(self) -> list[int]:
        processes = [self.api, *(worker for worker, _ in self.workers)]
        return [p.pid for p in processes if p.poll() is None]

    def kill_worker(self) -> int:
        """kill -9 the first live worker; its pid."""
        for worker, _port in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGKILL)
                worker.wait(timeout=STOP_TIMEOUT)
                return worker.pid
        raise RuntimeError("no live worker to kill")

    def backend_seconds(self) -> dict[str, float]:
        """Seconds the live workers' request threads spent in each backend so far."""
        totals: dict[str, float] = {}
        for worker, port in self.workers:
            if worker.poll() is not None:
                continue
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            for match in BACKEND_METRIC.finditer(text):
                backend = match.group("backend").lower()
                totals[backend] = totals.get(backend, 0.0) + float(match.group("value"))
        return totals

    def logs(self) -> str:
        return "\n".join(
            f"== {path.name}\n" + path.read_text()[-3000:]
            for path in sorted(self.workdir.glob("*.log"))
        )


def _spawn(args: list[str], log: pathlib.Path, logs: list) -> subprocess.Popen:
    handle = open(log, "w")  # closed when the deployment stops
    logs.append(handle)
    return subprocess.Popen(
        args, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )


def _wait_ready(url: str, process: subprocess.Popen, log: pathlib.Path, path: str = "/") -> None:
    """Until url+path answers 200 (the API, or a worker's metrics once it is up)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{log.stem} exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(url + path, timeout=2).status_code == 200:
                return
        time.sleep(0.1)  # polling with a deadline
    raise RuntimeError(f"{log.stem} not answering after {START_TIMEOUT} s")


def _stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)


@contextlib.contextmanager
def running(
    workdir: pathlib.Path,
    *,
    database_url: str,
    queue_url: str,
    redis_url: str,
    ironic_url: str,
    workers: int,
    threads: int,
) -> Iterator[Ours]:
    """The deployment on a database already created (and upgraded here)."""
    workdir.mkdir(parents=True, exist_ok=True)
    redis_base = redis_url.split("://", 1)[1].split("/", 1)[0]
    port = free_port()
    queue_name = f"fleet-{uuid.uuid4().hex[:8]}"
    config = workdir / "inspector.conf"
    config.write_text(
        render_config(
            {
                "DEFAULT": {
                    "auth_strategy": "noauth",
                    "state_path": workdir / "state",
                    "listen_address": "127.0.0.1",
                    "listen_port": port,
                    # As the peer (its default): a batch of 1,000 at once outlasts the
                    # design's 900 s on this machine's Ironic.
                    "timeout": 3600,
                },
                "database": {"connection": database_url},
                "queue": {
                    "transport_url": queue_url,
                    "queue_name": queue_name,
                },
                "coordination": {
                    "backend_url": f"redis://{redis_base}?timeout=5"
                    f"&namespace=fleet-{uuid.uuid4().hex[:8]}"
                },
                "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
                # Every simulated ramdisk posts from 127.0.0.1; real ones each from
                # their own address: the per-source limit would refuse a burst here.
                "api": {"continue_rate_limit": 0},
                "processing": {"store_data": "database"},
                "worker": {"pool_size": threads},
            }
        )
    )
    subprocess.run(
        [*INSPECTOR, "db", "upgrade", "--config-file", str(config)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    logs: list = []
    processes: list[subprocess.Popen] = []
    try:
        api_log = workdir / "api.log"
        api = _spawn([*INSPECTOR, "api", "--config-file", str(config)], api_log, logs)
        processes.append(api)
        started = []
        for index in range(workers):
            metrics_port = free_port()
            own = workdir / f"worker-{index}.conf"
            own.write_text(render_config({"metrics": {"worker_listen_port": metrics_port}}))
            worker = _spawn(
                [*INSPECTOR, "worker", "--config-file", str(config), "--config-file", str(own)],
                workdir / f"worker-{index}.log",
                logs,
            )
            processes.append(worker)
            started.append((worker, metrics_port))
        url = f"http://127.0.0.1:{port}"
        _wait_ready(url, api, api_log)
        for (worker, metrics_port), index in zip(started, range(workers), strict=True):
            log = workdir / f"worker-{index}.log"
            _wait_ready(f"http://127.0.0.1:{metrics_port}/metrics", worker, log, path="")
        yield Ours(workdir, config, url, api, started, logs)
    finally:
        _stop(processes)
        for handle in logs:
            handle.close()
        delete_queues(queue_url, queue_name)
