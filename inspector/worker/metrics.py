"""Prometheus metrics of one worker process: its transitions, task durations, busy node
locks, backend failures and time in each backend, the singletons it leads and its PXE
firewall.

Each WorkerMetrics has its own registry (no global one); the leaders and the firewall
are read at scrape time. It only counts: it never changes what the worker does.
"""

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import start_wsgi_server

from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)

#: Task duration buckets in seconds, from a quick state change to a slow power-on.
BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

#: Outcomes of one delivery, the `outcome` label of inspector_worker_transitions_total.
APPLIED = "applied"  # a new transition committed (and its task run), or a removal done
DONE = "done"  # a redelivered request already finished: consumed, nothing redone
#: A request already applied (by the API, or by a worker that died or lost a backend)
#: whose task this worker ran: how the API's `inspect`, `abort` and `reapply` reach
#: the worker; or a strict one whose task had run, whose follow-up this worker applied.
RESUMED = "resumed"
FAILED = "failed"  # the task failed: the node went to error, the request consumed
REFUSED = "refused"  # the state machine refused the event: recorded and consumed
RETRIED = "retried"  # not applicable yet (node busy, race lost...): requeued
#: A power check Ironic could not answer: requeued, its bound counted again from then.
DEFERRED = "deferred"
DEAD_LETTERED = "dead_lettered"  # malformed, unknown or out of attempts
INTERRUPTED = "interrupted"  # a backend outage during the task: left unacked


class Recorder(Protocol):
    """What the handler reports; NoMetrics and WorkerMetrics both do."""

    def transition(self, event: str, outcome: str) -> None: ...
    def task_duration(self, state: str, seconds: float) -> None: ...
    def lock_busy(self) -> None: ...
    def introspection_ended(self, state: str, seconds: float) -> None: ...
    def drift_found(self, summary: dict[str, int]) -> None: ...


class NoMetrics:
    """Records nothing: a worker without a metrics port."""

    def transition(self, event: str, outcome: str) -> None:
        pass

    def task_duration(self, state: str, seconds: float) -> None:
        pass

    def lock_busy(self) -> None:
        pass

    def introspection_ended(self, state: str, seconds: float) -> None:
        pass

    def drift_found(self, summary: dict[str, int]) -> None:
        pass

    def backend_failed(self, service: str) -> None:
        pass

    def backend_time(self, backend: str, seconds: float) -> None:
        pass


class Leading(Protocol):
    @property
    def leadership(self) -> Any: ...


class ProcessCollector:
    """The gauges read at scrape time: which singletons this process leads, and the
    state of its PXE firewall (`status` returns a firewall Status)."""

    def __init__(self) -> None:
        self.elections: dict[str, Leading] = {}
        self.firewall_status: Callable[[], Any] | None = None
        self.clock: Callable[[], float] = time.time

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        leader = GaugeMetricFamily(
            "inspector_worker_leader",
            "1 when this process leads the singleton, else 0",
            labels=["singleton"],
        )
        for singleton, election in sorted(self.elections.items()):
            leader.add_metric([singleton], 1 if election.leadership is not None else 0)
        yield leader
        if self.firewall_status is not None:
            yield from self._firewall(self.firewall_status())

    def _firewall(self, status: Any) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "inspector_worker_firewall_open",
            "1 when the PXE port is open on this host",
            1 if status.open else 0,
        )
        yield GaugeMetricFamily(
            "inspector_worker_firewall_whitelist",
            "MACs allowed through the PXE firewall",
            status.whitelist,
        )
        yield GaugeMetricFamily(
            "inspector_worker_firewall_blacklist",
            "MACs denied by the PXE firewall (not whitelisted)",
            status.blacklist,
        )
        if getattr(status, "apply_seconds", None) is not None:
            yield GaugeMetricFamily(
                "inspector_worker_firewall_apply_seconds",
                "Seconds the last sync of the firewall (one atomic apply) took",
                status.apply_seconds,
            )
        if status.last_sync is not None:
            yield GaugeMetricFamily(
                "inspector_worker_firewall_last_sync_age_seconds",
                "Seconds since the firewall's lists were last polled or heard of",
                max(0.0, self.clock() - status.last_sync),
            )


class WorkerMetrics(NoMetrics):
    """The registry of one worker process, and its HTTP server once `serve` is called."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._transitions = Counter(
            "inspector_worker_transitions",
            "Transition requests settled by this worker, by event and outcome",
            ["event", "outcome"],
            registry=self.registry,
        )
        self._durations = Histogram(
            "inspector_worker_task_duration_seconds",
            "Duration of the task run on entering each state",
            ["state"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._introspections = Histogram(
            "inspector_worker_introspection_duration_seconds",
            "From start to finished or error, for the introspections this worker ended",
            ["state"],
            buckets=(10, 30, 60, 120, 300, 600, 900, 1800, 3600),
            registry=self.registry,
        )
        self._drift = Counter(
            "inspector_worker_drift_nodes",
            "Introspections this worker processed whose hardware changed since the "
            "node's previous one, by category (system, disks, nics...)",
            ["category"],
            registry=self.registry,
        )
        self._lock_busy = Counter(
            "inspector_worker_lock_busy",
            "Requests put back because another worker held the node lock",
            registry=self.registry,
        )
        self._backend_failures = Counter(
            "inspector_worker_backend_failures",
            "Failed attempts on each backend (database, DLM, queue, Ironic)",
            ["service"],
            registry=self.registry,
        )
        self._backend_seconds = Counter(
            "inspector_worker_backend_seconds",
            "Seconds request threads spent in calls to each backend (database, DLM, "
            "queue, Ironic), waits for a queue delivery excluded",
            ["backend"],
            registry=self.registry,
        )
        self._backend_calls = Counter(
            "inspector_worker_backend_calls",
            "Calls request threads made to each backend",
            ["backend"],
            registry=self.registry,
        )
        # Each backend's two children, found once: every backend call is recorded.
        self._backend_children: dict[str, tuple[Any, Any]] = {}
        self.process = ProcessCollector()
        self.registry.register(self.process)
        self._server: Any = None

    def transition(self, event: str, outcome: str) -> None:
        self._transitions.labels(event, outcome).inc()

    def task_duration(self, state: str, seconds: float) -> None:
        self._durations.labels(state).observe(seconds)

    def lock_busy(self) -> None:
        self._lock_busy.inc()

    def introspection_ended(self, state: str, seconds: float) -> None:
        self._introspections.labels(state).observe(seconds)

    def drift_found(self, summary: dict[str, int]) -> None:
        for category, count in summary.items():
            if count:
                self._drift.labels(category).inc()

    def backend_failed(self, service: str) -> None:
        self._backend_failures.labels(service).inc()

    def backend_time(self, backend: str, seconds: float) -> None:
        children = self._backend_children.get(backend)
        if children is None:
            children = self._backend_children.setdefault(
                backend,
                (self._backend_seconds.labels(backend), self._backend_calls.labels(backend)),
            )
        children[0].inc(seconds)
        children[1].inc()

    def watch_leader(self, singleton: str, election: Leading) -> None:
        self.process.elections[singleton] = election

    def watch_firewall(self, status: Callable[[], Any]) -> None:
        self.process.firewall_status = status

    def text(self) -> bytes:
        return generate_latest(self.registry)

    def serve(self, address: str, port: int) -> None:
        """Serve GET /metrics on address:port from a daemon thread."""
        try:
            self._server, _thread = start_wsgi_server(port, address, registry=self.registry)
        except OSError as exc:
            raise ConfigError(f"cannot serve worker metrics on {address}:{port}: {exc}") from exc
        LOG.info("Serving worker metrics on http://%s:%d/metrics", address, port)

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
