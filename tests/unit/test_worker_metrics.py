"""WorkerMetrics on its own registry, and the outcomes the Handler records in it."""

import dataclasses
import socket
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from inspector import errors
from inspector.firewall.status import Status
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from inspector.worker.delivery import lock_name
from inspector.worker.handler import Handler
from inspector.worker.metrics import NoMetrics, WorkerMetrics
from tests.unit.test_handler import (  # noqa: F401 - fixtures
    NODE,
    RecordingTasks,
    coordinator,
    deliver,
    killed_after_processing,
    queue,
    store,
    tasks,
)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def samples(metrics):
    """{(name, sorted labels): value} of every sample."""
    found = {}
    for family in text_string_to_metric_families(metrics.text().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(metrics, name, **labels):
    return samples(metrics).get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def metrics():
    return WorkerMetrics()


@pytest.fixture
def handler(store, coordinator, queue, tasks, metrics):  # noqa: F811
    return Handler(store, coordinator, queue, tasks, metrics=metrics)


def test_two_instances_do_not_share_a_registry():
    first, second = WorkerMetrics(), WorkerMetrics()
    first.transition("inspect", "applied")
    assert value(first, "inspector_worker_transitions_total", event="inspect", outcome="applied")
    assert (
        value(second, "inspector_worker_transitions_total", event="inspect", outcome="applied")
        is None
    )


def test_counters_and_histogram(metrics):
    metrics.transition("wait", "applied")
    metrics.transition("wait", "applied")
    metrics.lock_busy()
    metrics.backend_failed("database")
    metrics.task_duration("starting", 0.2)
    assert (
        value(metrics, "inspector_worker_transitions_total", event="wait", outcome="applied") == 2
    )
    assert value(metrics, "inspector_worker_lock_busy_total") == 1
    assert value(metrics, "inspector_worker_backend_failures_total", service="database") == 1
    assert value(metrics, "inspector_worker_task_duration_seconds_count", state="starting") == 1
    assert value(metrics, "inspector_worker_task_duration_seconds_sum", state="starting") == 0.2


class FakeElection:
    def __init__(self, leadership):
        self.leadership = leadership


def test_leaders_are_read_at_scrape_time(metrics):
    periodic = FakeElection(object())
    metrics.watch_leader("periodic", periodic)
    metrics.watch_leader("firewall", FakeElection(None))
    assert value(metrics, "inspector_worker_leader", singleton="periodic") == 1
    assert value(metrics, "inspector_worker_leader", singleton="firewall") == 0
    periodic.leadership = None
    assert value(metrics, "inspector_worker_leader", singleton="periodic") == 0


def status(**changes):
    base = Status(
        host="h",
        member="h-1",
        driver="noop",
        open=True,
        leader=True,
        term=3,
        open_until=None,
        whitelist=4,
        blacklist=2,
        whitelist_synced_at=990.0,
        blacklist_synced_at=995.0,
        heard_at=None,
        applied_at=995.0,
        error=None,
    )
    return dataclasses.replace(base, **changes)


def test_firewall_gauges(metrics):
    current = [status()]
    metrics.watch_firewall(lambda: current[0])
    metrics.process.clock = lambda: 1000.0
    assert value(metrics, "inspector_worker_firewall_open") == 1
    assert value(metrics, "inspector_worker_firewall_whitelist") == 4
    assert value(metrics, "inspector_worker_firewall_blacklist") == 2
    assert value(metrics, "inspector_worker_firewall_last_sync_age_seconds") == 5.0
    assert value(metrics, "inspector_worker_firewall_apply_seconds") is None
    current[0] = status(apply_seconds=0.004)
    assert value(metrics, "inspector_worker_firewall_apply_seconds") == 0.004
    current[0] = status(open=False, whitelist_synced_at=None, blacklist_synced_at=None)
    assert value(metrics, "inspector_worker_firewall_open") == 0
    assert value(metrics, "inspector_worker_firewall_last_sync_age_seconds") is None


def test_outages_report_each_failure_once(metrics):
    lifecycle = Lifecycle()
    budget = Outages(
        lifecycle, {"DLM": RetryPolicy(0, 1.0)}, clock=lambda: 0.0, observer=metrics.backend_failed
    )
    budget.failed("DLM", "down")  # a budget of 0: gives up on the first failure
    budget.give_up("queue", "client gave up")
    assert lifecycle.shutdown.is_set()
    assert value(metrics, "inspector_worker_backend_failures_total", service="DLM") == 1
    assert value(metrics, "inspector_worker_backend_failures_total", service="queue") == 1


def test_serves_metrics_over_http(metrics):
    port = free_port()
    metrics.transition("inspect", "applied")
    metrics.serve("127.0.0.1", port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            body = response.read().decode()
    finally:
        metrics.stop()
    assert 'inspector_worker_transitions_total{event="inspect",outcome="applied"} 1.0' in body
    metrics.stop()  # twice is fine


def test_a_taken_port_is_a_config_error(metrics):
    port = free_port()
    metrics.serve("127.0.0.1", port)
    try:
        with pytest.raises(errors.ConfigError, match="worker metrics"):
            WorkerMetrics().serve("127.0.0.1", port)
    finally:
        metrics.stop()


def test_no_metrics_records_nothing_and_is_the_default(store, coordinator, queue, tasks):  # noqa: F811
    assert isinstance(Handler(store, coordinator, queue, tasks).metrics, NoMetrics)
    NoMetrics().backend_failed("database")


def transitions(metrics):
    return {
        (dict(labels)["event"], dict(labels)["outcome"]): v
        for (name, labels), v in samples(metrics).items()
        if name == "inspector_worker_transitions_total"
    }


def test_a_whole_introspection_is_applied(handler, metrics):
    # wait and finish are follow-ups applied in the steps of inspect and continue.
    for event in ("inspect", "continue"):
        assert deliver(handler, event).outcome == "ack"
    assert transitions(metrics) == {
        ("inspect", "applied"): 1,
        ("wait", "applied"): 1,
        ("continue", "applied"): 1,
        ("finish", "applied"): 1,
    }
    assert value(metrics, "inspector_worker_task_duration_seconds_count", state="starting") == 1
    assert value(metrics, "inspector_worker_task_duration_seconds_count", state="processing") == 1
    # The fake clock ticks a second per read: the introspection took a few seconds.
    ended = "inspector_worker_introspection_duration_seconds"
    assert value(metrics, f"{ended}_count", state="finished") == 1
    assert value(metrics, f"{ended}_sum", state="finished") > 0


def test_busy_lock_is_counted_and_retried(handler, metrics, coordinator):  # noqa: F811
    deliver(handler, "inspect")
    with coordinator.try_lock(lock_name(NODE)) as held:
        assert held
        assert deliver(handler, "continue").outcome == "retry"
    assert value(metrics, "inspector_worker_lock_busy_total") == 1
    assert transitions(metrics)[("continue", "retried")] == 1


def test_refused_done_and_dead_lettered(handler, metrics):
    deliver(handler, "inspect", request_id="r1")
    assert deliver(handler, "inspect", request_id="r1").outcome == "ack"  # redelivered
    assert deliver(handler, "finish").outcome == "ack"  # starting refuses finish
    assert deliver(handler, "bogus").outcome == "dead"
    assert deliver(handler, "wait", attempt=10_000).outcome == "dead"
    found = transitions(metrics)
    assert found[("inspect", "done")] == 1
    assert found[("finish", "refused")] == 1
    assert found[("unknown", "dead_lettered")] == 1
    assert found[("wait", "dead_lettered")] == 1


def test_a_failing_task_is_failed(store, coordinator, queue, metrics):  # noqa: F811
    handler = Handler(store, coordinator, queue, RecordingTasks(fail_on="start"), metrics=metrics)
    assert deliver(handler, "inspect").outcome == "ack"
    assert transitions(metrics) == {("inspect", "failed"): 1}
    assert value(metrics, "inspector_worker_task_duration_seconds_count", state="starting") == 1


def test_an_outage_in_the_task_is_interrupted_then_resumed(store, coordinator, queue, metrics):  # noqa: F811
    outage = RecordingTasks(fail_on="process-outage")
    handler = Handler(store, coordinator, queue, outage, metrics=metrics)
    for event in ("inspect", "wait"):
        deliver(handler, event)
    with pytest.raises(errors.ServiceUnavailable):
        deliver(handler, "continue", request_id="c1")
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    found = transitions(metrics)
    assert found[("continue", "interrupted")] == 1
    assert found[("continue", "resumed")] == 1


def test_a_late_follow_up_is_resumed(store, coordinator, queue, tasks, metrics):  # noqa: F811
    killed_after_processing(store, coordinator, queue, tasks)
    handler = Handler(store, coordinator, queue, tasks, metrics=metrics)
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    assert transitions(metrics) == {("continue", "resumed"): 1, ("finish", "applied"): 1}
    # Its task did not run again here.
    assert (
        value(metrics, "inspector_worker_task_duration_seconds_count", state="processing") is None
    )
