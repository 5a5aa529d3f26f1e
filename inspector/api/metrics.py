"""GET /metrics: Prometheus text of this API process (requests, latencies) and of the
cluster as the store and the queue see it (nodes per state, queue depth, leaders, the
last run of each periodic task, the notification backlog).

Each app has its own registry (no global one); the cluster figures are read at scrape
time, one store query and one queue call per scrape.
"""

import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import flask
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from inspector import errors
from inspector.api.context import Services, services
from inspector.machine import State

blueprint = flask.Blueprint("metrics", __name__)

REGISTRY_KEY = "inspector.metrics"
#: Latency buckets in seconds, from a status read to a slow `/v1/continue`.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ClusterCollector:
    """Collects the cluster-wide gauges from the store and the queue at scrape time."""

    def __init__(self, app: flask.Flask) -> None:
        self.app = app

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        with self.app.app_context():
            yield from self._collect(services())

    def _collect(self, found: Services) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "inspector_backend_up", "1 when this API reaches the backend", labels=["backend"]
        )
        try:
            census = found.store.census()
        except errors.InspectorError:
            up.add_metric(["database"], 0)
            census = None
        else:
            up.add_metric(["database"], 1)
        depth = None
        try:
            depth = found.queue.depth() if hasattr(found.queue, "depth") else None
        except errors.InspectorError:
            up.add_metric(["queue"], 0)
        else:
            up.add_metric(["queue"], 1)
        yield up
        if depth is not None:
            yield GaugeMetricFamily(
                "inspector_queue_depth", "Transition requests waiting in the work queue", depth
            )
        if census is None:
            return
        nodes = GaugeMetricFamily(
            "inspector_nodes", "Introspection records per state", labels=["state"]
        )
        for state in State:
            nodes.add_metric([state.value], census.nodes_by_state.get(state.value, 0))
        yield nodes
        now = datetime.now(UTC).replace(tzinfo=None)
        leaders = GaugeMetricFamily(
            "inspector_leader_term",
            "Current leadership term of each singleton, labelled with its holder",
            labels=["singleton", "holder"],
        )
        for kind, (holder, term, _since) in sorted(census.leaders.items()):
            leaders.add_metric([kind, holder], term)
        yield leaders
        age = GaugeMetricFamily(
            "inspector_periodic_last_run_age_seconds",
            "Seconds since the last run of each periodic task started",
            labels=["task"],
        )
        duration = GaugeMetricFamily(
            "inspector_periodic_last_run_duration_seconds",
            "Duration of the last finished run of each periodic task",
            labels=["task"],
        )
        for task, (started, finished, _outcome) in sorted(census.last_runs.items()):
            age.add_metric([task], (now - started).total_seconds())
            if finished is not None:
                duration.add_metric([task], (finished - started).total_seconds())
        yield age
        yield duration
        yield GaugeMetricFamily(
            "inspector_notifications_pending",
            "Notifications in the outbox not yet accepted by every driver",
            census.notifications_pending,
        )


#: Where `Clock` leaves the time a request arrived, in the WSGI environ.
STARTED_KEY = "inspector.started"


class Clock:
    """WSGI middleware: the time each request arrived, for its latency. Cheaper than a
    before_request hook, which Flask calls through its hook machinery."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        environ[STARTED_KEY] = time.perf_counter()
        return self.app(environ, start_response)


def install(app: flask.Flask) -> None:
    """Register /metrics and the request counters on app, with a registry of its own."""
    registry = CollectorRegistry(auto_describe=False)
    requests_total = Counter(
        "inspector_api_requests",
        "API requests by route and status",
        ["endpoint", "method", "status"],
        registry=registry,
    )
    latency = Histogram(
        "inspector_api_request_duration_seconds",
        "API request latency by route",
        ["endpoint", "method"],
        buckets=BUCKETS,
        registry=registry,
    )
    registry.register(ClusterCollector(app))
    app.extensions[REGISTRY_KEY] = registry
    # labels() takes a lock and checks its arguments on each call: keep the children.
    # Endpoints, methods and statuses are few (unrouted requests are all "unknown").
    counters: dict[tuple[str, str, int], Any] = {}
    histograms: dict[tuple[str, str], Any] = {}

    def finished(response: flask.Response) -> flask.Response:
        request = flask.request
        began = request.environ.get(STARTED_KEY)
        endpoint, method = request.endpoint or "unknown", request.method
        if began is not None:
            histogram = histograms.get((endpoint, method))
            if histogram is None:
                histogram = histograms[endpoint, method] = latency.labels(endpoint, method)
            histogram.observe(time.perf_counter() - began)
        key = (endpoint, method, response.status_code)
        counter = counters.get(key)
        if counter is None:
            counter = counters[key] = requests_total.labels(endpoint, method, str(key[2]))
        counter.inc()
        return response

    app.wsgi_app = Clock(app.wsgi_app)  # type: ignore[method-assign]  # Flask's way to add middleware
    app.after_request(finished)
    app.register_blueprint(blueprint)


@blueprint.get("/metrics")
def metrics() -> flask.Response:
    services().policy.authorize("introspection:metrics", flask.g.credentials)
    body = generate_latest(flask.current_app.extensions[REGISTRY_KEY])
    return flask.Response(body, mimetype=CONTENT_TYPE_LATEST.split(";")[0])
