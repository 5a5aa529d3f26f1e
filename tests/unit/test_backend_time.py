"""inspector.backend_time at each backend's one timing point, into the worker's metrics:
a store statement (on a real SQLite engine), an Ironic request (the real client on a
scripted connection), a queue put and settling (a real in-memory kombu queue, the wait
for a delivery not counted), a DLM lock and group call (a real tooz file:// driver); and
only the threads that bind a recorder (the worker pool's) are counted."""

import json
import threading
import uuid
from typing import Any

import pytest

from inspector import backend_time, errors
from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from inspector.coordination import connect
from inspector.ironic import Ironic
from inspector.ironic.connection import Reply
from inspector.lifecycle import Lifecycle
from inspector.worker.metrics import WorkerMetrics
from inspector.worker.pool import Pool

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"


def calls(metrics: WorkerMetrics, backend: str) -> float:
    found = metrics.registry.get_sample_value(
        "inspector_worker_backend_calls_total", {"backend": backend}
    )
    return found or 0.0


def seconds(metrics: WorkerMetrics, backend: str) -> float:
    found = metrics.registry.get_sample_value(
        "inspector_worker_backend_seconds_total", {"backend": backend}
    )
    return found or 0.0


@pytest.fixture
def metrics():
    return WorkerMetrics()


def test_store_statements_count_as_database_calls(store, metrics):
    store.mark_power_on("worker-0")  # not bound: not counted
    assert calls(metrics, "database") == 0
    with backend_time.recorded(metrics.backend_time):
        assert store.last_power_on().holder == "worker-0"
        with pytest.raises(errors.NotFound):
            store.get_node("missing")
        store.clock()  # the store's clock is no database call
    assert calls(metrics, "database") == 2
    assert seconds(metrics, "database") > 0


def test_only_the_threads_that_bind_a_recorder_count(store, metrics):
    with backend_time.recorded(metrics.backend_time):
        other = threading.Thread(target=store.last_power_on)
        other.start()
        other.join(10)
        assert calls(metrics, "database") == 0
        store.last_power_on()
    store.last_power_on()
    assert calls(metrics, "database") == 1


class ScriptedConnection:
    """Ironic's connection answering from a script (an HTTP error is a Reply)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def send(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Reply:
        return self.replies.pop(0)


def test_an_ironic_request_with_its_retries_is_one_call(conf, metrics):
    conf.set_override("retry_interval", 0.01, group="ironic")
    node = {"uuid": NODE, "name": "n", "provision_state": "manageable", "driver": "fake"}
    answer = Reply(200, json.dumps(node).encode())
    ironic = Ironic(conf, connection=ScriptedConnection(Reply(503, b"busy"), answer, answer))
    with backend_time.recorded(metrics.backend_time):
        assert ironic.get_node(NODE).uuid == NODE  # one retry after the 503
        ironic.get_node(NODE)
    assert ironic.calls == 3
    assert calls(metrics, "Ironic") == 2
    assert seconds(metrics, "Ironic") >= 0.01  # the wait before the retry


@pytest.fixture
def work_queue():
    queue = WorkQueue("memory://", f"test-{uuid.uuid4().hex[:12]}")
    yield queue
    queue.close()


def test_queue_puts_and_settling_count_not_the_wait(work_queue, metrics):
    with backend_time.recorded(metrics.backend_time):
        assert work_queue.get(0.05) is None  # waiting for work is idle time
        assert calls(metrics, "queue") == 0
        work_queue.put(Request(node_uuid=NODE, event="inspect"))
        work_queue.put(Request(node_uuid=NODE, event="wait"))
        assert calls(metrics, "queue") == 2
        work_queue.get(1.0).ack()
        assert calls(metrics, "queue") == 3
        work_queue.get(1.0).retry(30)  # a copy published, the original acked
    assert calls(metrics, "queue") == 5
    assert seconds(metrics, "queue") > 0


def test_dlm_lock_and_group_calls_count(tmp_path, metrics):
    member = connect(f"file://{tmp_path}", "worker-0")
    member.start()
    try:
        with backend_time.recorded(metrics.backend_time):
            with member.try_lock("node") as held:
                assert held
                assert calls(metrics, "DLM") == 1  # taken; the block is not timed
            assert calls(metrics, "DLM") == 2  # and released
            member.join("workers")
            assert member.members("workers") == {"worker-0"}
        assert calls(metrics, "DLM") == 4
        assert seconds(metrics, "DLM") > 0
    finally:
        member.stop()


def test_a_call_inside_a_timed_call_counts_once():
    seen: list[tuple[str, float]] = []
    with backend_time.recorded(lambda backend, spent: seen.append((backend, spent))):
        with pytest.raises(RuntimeError), backend_time.timing("database"):
            with backend_time.timing("database"):
                raise RuntimeError("failed")
        with backend_time.timing("queue"):
            pass
    assert [backend for backend, _ in seen] == ["database", "queue"]


class Acking:
    def __init__(self) -> None:
        self.handled = threading.Event()

    def handle(self, delivery) -> None:
        delivery.ack()
        self.handled.set()


def test_the_pool_threads_record_their_calls(work_queue, metrics):
    lifecycle, handler = Lifecycle(), Acking()
    pool = Pool(
        work_queue, handler, lifecycle, size=1, get_timeout=0.05, record=metrics.backend_time
    )
    work_queue.put(Request(node_uuid=NODE, event="inspect"))  # this thread: not counted
    pool.start()
    try:
        assert handler.handled.wait(10)
    finally:
        lifecycle.stop("test over")
        assert pool.join(10)
    assert calls(metrics, "queue") == 1  # the ack; the pool's waits are not calls
