"""One batch of introspections against a service under test (ours or ironic-inspector),
driven through its REST API like an operator's script, with every node's ramdisk
simulated; the figures of the batch.

At most `concurrency` introspections are in flight: the next one starts when one ends.
A node is looked at when the proxy sees it powered off (the last Ironic call of an
introspection), and all of them now and then through the status listing (errors end
without a power-off): at most SWEEP_RATE statuses a second on average, so that a batch
of 1,000 is not swept every few seconds, which would cost the service more than the
introspections themselves. Ironic's `inspector` interface reads each node's status
once a minute ([inspector] status_check_period = 60): 17 reads a second for 1,000 nodes.
Times are the service's own `started_at`/`finished_at`; the batch runs from the first
start request to the last `finished_at`.
"""

import concurrent.futures
import dataclasses
import datetime
import os
import statistics
import threading
import time
from collections.abc import Callable

import requests

from bench.fleet import procstat
from bench.fleet import proxy as proxy_
from bench.fleet.ironic import Node
from bench.fleet.ramdisk import Ramdisks, payload

API_VERSION = {"X-OpenStack-Ironic-Inspector-API-Version": "1.12"}
#: Seconds between looks at a powered-off node.
LOOK_INTERVAL = 0.05
#: Seconds between two sweeps at least, and statuses listed per second at most on
#: average (a sweep of n statuses waits n / SWEEP_RATE seconds before the next one).
SWEEP_INTERVAL = 3.0
SWEEP_RATE = 50.0
#: Statuses per page of the listing (both services' default maximum).
PAGE = 1000
#: Threads sending start requests.
STARTERS = 8
#: Seconds the processes are watched idle before the batch, for their idle CPU cost.
IDLE_SAMPLE = 3.0


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """user+system CPU seconds of each live process."""
    tick = os.sysconf("SC_CLK_TCK")
    result = {}
    for pid in pids:
        fields = procstat.fields(pid)
        if fields is not None:  # utime and stime, in clock ticks
            result[pid] = (int(fields[11]) + int(fields[12])) / tick
    return result


def sweep_pause(listed: int) -> float:
    """Seconds until the next sweep, after one that listed `listed` statuses."""
    return max(SWEEP_INTERVAL, listed / SWEEP_RATE)


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {
        "p50": at(0.50),
        "p95": at(0.95),
        "p99": at(0.99),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
        "count": len(ordered),
    }


def _when(value: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment


@dataclasses.dataclass
class Batch:
    """A batch to run: the service's URL, the nodes, and what to measure it with."""

    url: str
    nodes: list[Node]
    concurrency: int
    ramdisks: Ramdisks
    proxy: proxy_.Proxy
    template: dict
    pids: Callable[[], list[int]]
    deadline: float
    backend_seconds: Callable[[], dict[str, float]] | None = None
    kill: Callable[[], object] | None = None  # called once, half-way through

    def __post_init__(self) -> None:
        self._session = requests.Session()
        self._session.headers.update(API_VERSION)
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.concurrency)
        self._pending: set[str] = set()
        self._look: set[str] = set()
        self._done: dict[str, dict] = {}
        self._started_wall: dict[str, datetime.datetime] = {}
        self._killed_at: float | None = None
        self._sent: dict[str, float] = {}
        self._answered: dict[str, float] = {}
        self._stopping = threading.Event()

    # -------------------------------------------------------------- running

    def on_power(self, node: str | None, target: str) -> None:
        """The proxy saw a power action: boot a ramdisk, or look at the node soon."""
        if node is None:
            return
        if target in proxy_.POWER_ON_TARGETS:
            self.ramdisks.boot(node)
        elif target == "power off":
            with self._lock:
                if node in self._pending:
                    self._look.add(node)

    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self._stopping.set()  # starters waiting for a slot leave (on an interruption)

    def _run(self) -> dict:
        by_uuid = {node.uuid: node for node in self.nodes}
        self.ramdisks.register(
            {n.uuid: payload(self.template, [n.mac], n.bmc) for n in self.nodes}, self.url
        )
        self.proxy.ledger.reset()
        self.proxy.ledger.names = {n.name: n.uuid for n in self.nodes}
        idle = cpu_seconds(self.pids())
        time.sleep(IDLE_SAMPLE)  # the processes' own idle cost, subtracted below
        cpu_before = cpu_seconds(self.pids())
        machine_before = procstat.machine_seconds()
        idle_rate = sum(cpu_before.get(p, 0.0) - c for p, c in idle.items()) / IDLE_SAMPLE
        backends_before = self.backend_seconds() if self.backend_seconds else {}
        cpu_dead: dict[int, float] = {}
        start_wall = datetime.datetime.now(datetime.UTC)
        started = time.monotonic()
        refused: dict[str, str] = {}
        with concurrent.futures.ThreadPoolExecutor(STARTERS) as starters:
            starting = starters.map(lambda n: self._start(n, refused), self.nodes)
            watcher = threading.Thread(target=self._watch, args=(started,), daemon=True)
            watcher.start()
            try:
                list(starting)
            except BaseException:
                self._stopping.set()  # before the pool waits for its starters
                raise
        with self._lock:
            for node, why in refused.items():
                self._done[node] = {"finished": True, "error": why, "refused": True}
        while watcher.is_alive():
            watcher.join(0.5)
            if self.kill and self._killed_at is None and len(self._done) >= len(self.nodes) / 2:
                doomed = cpu_seconds(self.pids())
                victim = self.kill()
                cpu_dead = {victim: doomed.get(victim, 0.0)} if isinstance(victim, int) else {}
                self._killed_at = time.monotonic() - started
        cpu_after = cpu_seconds(self.pids())
        machine_after = procstat.machine_seconds()
        cpu_after.update({pid: cpu for pid, cpu in cpu_dead.items() if pid not in cpu_after})
        backends_after = self.backend_seconds() if self.backend_seconds else {}
        figures = self._figures(
            by_uuid, start_wall, started, cpu_before, cpu_after, backends_before, backends_after
        )
        count = len(self.nodes)
        busy = (
            figures["cpu_ms_per_introspection"]
            - idle_rate * figures["batch_seconds"] * 1000 / count
        )
        figures["idle_cpu_ms_per_second"] = idle_rate * 1000
        # Everything on the machine (services, Ironic or the fake, this benchmark): what
        # bounds the rate when every part shares the same cores.
        machine_busy = machine_after[0] - machine_before[0]
        machine_total = machine_after[1] - machine_before[1]
        figures["machine_cpu_ms_per_introspection"] = machine_busy * 1000 / count
        figures["machine_busy"] = machine_busy / machine_total if machine_total else None
        figures["busy_cpu_ms_per_introspection"] = max(0.0, busy)
        return figures

    def _start(self, node: Node, refused: dict[str, str]) -> None:
        while not self._slots.acquire(timeout=0.5):
            if self._stopping.is_set():
                return
        with self._lock:
            self._pending.add(node.uuid)
            self._started_wall[node.uuid] = datetime.datetime.now(datetime.UTC)
            self._sent[node.uuid] = time.monotonic()
        reply = self._session.post(f"{self.url}/v1/introspection/{node.uuid}", timeout=120)
        self._answered[node.uuid] = time.monotonic()
        if reply.status_code != 202:
            with self._lock:
                self._pending.discard(node.uuid)
                refused[node.uuid] = f"{reply.status_code}: {reply.text[:200]}"
            self._slots.release()

    def _ended(self, node: str, status: dict) -> None:
        with self._lock:
            if node in self._pending:
                self._pending.discard(node)
                self._look.discard(node)
                self._done[node] = status
                self._slots.release()

    def _watch(self, started: float) -> None:
        session = requests.Session()
        session.headers.update(API_VERSION)
        next_sweep = time.monotonic() + SWEEP_INTERVAL
        while len(self._done) < len(self.nodes):
            if time.monotonic() - started > self.deadline or self._stopping.is_set():
                return
            with self._lock:
                look = list(self._look)
            if time.monotonic() >= next_sweep:
                listed = self._sweep(session)
                next_sweep = time.monotonic() + sweep_pause(listed)
            for node in look:
                reply = session.get(f"{self.url}/v1/introspection/{node}", timeout=60)
                if reply.status_code == 200 and reply.json().get("finished"):
                    self._ended(node, reply.json())
            time.sleep(LOOK_INTERVAL)  # polling the service with the batch's deadline

    def _sweep(self, session: requests.Session) -> int:
        """Every introspection's status through the listing (a page per 1,000), for the
        ones that end without a power-off (errors): a few requests, not one a node.
        The number of statuses listed."""
        marker = None
        listed = 0
        while True:
            params = {"limit": PAGE, **({"marker": marker} if marker else {})}
            reply = session.get(f"{self.url}/v1/introspection", params=params, timeout=60)
            if reply.status_code != 200:
                return listed
            page = reply.json().get("introspection") or []
            listed += len(page)
            for status in page:
                if status.get("finished"):
                    self._ended(status["uuid"], status)
            if len(page) < PAGE:
                return listed
            marker = page[-1]["uuid"]

    # -------------------------------------------------------------- figures

    def _figures(
        self,
        by_uuid: dict[str, Node],
        start_wall: datetime.datetime,
        started: float,
        cpu_before: dict[int, float],
        cpu_after: dict[int, float],
        backends_before: dict[str, float],
        backends_after: dict[str, float],
    ) -> dict:
        done = self._done
        finished = [s for s in done.values() if not s.get("error")]
        errors = {n: s.get("error") for n, s in done.items() if s.get("error")}
        ends = [_when(s["finished_at"]) for s in done.values() if s.get("finished_at")]
        durations = [
            (_when(s["finished_at"]) - _when(s["started_at"])).total_seconds()
            for s in finished
            if s.get("finished_at") and s.get("started_at")
        ]
        batch_seconds = (
            (max(ends) - start_wall).total_seconds() if ends else time.monotonic() - started
        )
        count = len(self.nodes)
        latencies = self.ramdisks.latencies()
        cpu = sum(cpu_after.get(pid, 0.0) - before for pid, before in cpu_before.items())
        seen = self.proxy.ledger.reset()
        calls = proxy_.summary(seen, set(by_uuid), self.proxy.ledger.names)
        backends = {
            name: (backends_after.get(name, 0.0) - backends_before.get(name, 0.0)) / count
            for name in set(backends_after) | set(backends_before)
        }
        if calls["ironic_seconds_per_introspection"]:
            backends["ironic (proxy)"] = calls["ironic_seconds_per_introspection"]
        return {
            "batch": count,
            "concurrency": self.concurrency,
            "boot_delay": self.ramdisks.boot_delay,
            "batch_seconds": batch_seconds,
            "throughput": len(finished) / batch_seconds if batch_seconds else 0.0,
            "finished": len(finished),
            "errors": len(errors),
            "error_samples": dict(list(errors.items())[:5]),
            "unfinished": count - len(done),
            "killed_at_seconds": self._killed_at,
            "introspection_seconds": percentiles(durations),
            "continue_ms": percentiles([s * 1000 for s, _ in latencies]),
            "continue_non_2xx": sum(1 for _, code in latencies if not 200 <= code < 300),
            # Posts that failed (each attempt; a connection error or a 5xx is retried as
            # the ramdisk does): node, attempt, status (0: no answer), what came back.
            "continue_failures": [list(f) for f in self.ramdisks.failures[:10]],
            "cpu_ms_per_introspection": cpu * 1000 / count,
            "backend_seconds_per_introspection": backends,
            "histograms": {
                "continue_ms": [round(s * 1000, 3) for s, _ in latencies],
                "introspection_seconds": [round(d, 4) for d in durations],
            },
            **calls,
            **({"steps": self._steps(seen)} if count == 1 else {}),
        }

    def _steps(self, seen: list[proxy_.Call]) -> list[dict]:
        """One introspection's timeline: seconds from its start request to each step's end
        (the API's answer, each Ironic call, the ramdisk's post, finished)."""
        node = self.nodes[0].uuid
        zero = self._sent.get(node)
        if zero is None:
            return []
        names = self.proxy.ledger.names
        steps = [("start request answered", self._answered.get(node, zero), 0.0)]
        steps += [
            (f"Ironic: {c.kind}", c.at, c.seconds)
            for c in seen
            if names.get(c.node, c.node) == node
        ]
        steps += [
            ("ramdisk posted /v1/continue", sent + took, took)
            for posted, sent, took in self.ramdisks.posted
            if posted == node
        ]
        status = self._done.get(node) or {}
        if status.get("finished_at"):
            start = self._started_wall[node]
            finished = (_when(status["finished_at"]) - start).total_seconds()
            steps.append(("finished (the service's finished_at)", zero + finished, 0.0))
        return [
            {"step": what, "at_seconds": round(at - zero, 4), "took_seconds": round(took, 4)}
            for what, at, took in sorted(steps, key=lambda step: step[1])
        ]
