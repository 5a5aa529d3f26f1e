"""The worker pool's loop: one step at a time, the shutdown flag, queue outages."""

import threading

import pytest

from inspector import errors
from inspector.broker.message import Request
from inspector.lifecycle import Lifecycle
from inspector.worker.pool import Pool
from tests.unit.test_handler import FakeDelivery


class ListSource:
    def __init__(self, deliveries=(), fail=False):
        self.deliveries = list(deliveries)
        self.fail = fail
        self.timeouts = []
        self.starts = []

    def get(self, timeout, *, starts=True):
        self.timeouts.append(timeout)
        self.starts.append(starts)
        if self.fail:
            raise errors.ServiceUnavailable("RabbitMQ is gone")
        return self.deliveries.pop(0) if self.deliveries else None


class RecordingHandler:
    def __init__(self, raises=None):
        self.handled = []
        self.raises = raises

    def handle(self, delivery):
        self.handled.append(delivery)
        if self.raises:
            raise self.raises
        delivery.ack()


def pool(source, handler, lifecycle=None, size=1):
    return Pool(source, handler, lifecycle or Lifecycle(), size=size, get_timeout=0.01)


def delivery(attempt=0):
    return FakeDelivery(Request(node_uuid="n1", event="wait", attempt=attempt))


def test_step_hands_a_delivery_to_the_handler():
    d = delivery()
    handler = RecordingHandler()
    assert pool(ListSource([d]), handler).step() is True
    assert handler.handled == [d]
    assert d.outcome == "ack"


def test_step_on_an_empty_queue_uses_the_get_timeout():
    source = ListSource()
    assert pool(source, RecordingHandler()).step() is False
    assert source.timeouts == [0.01]


def test_shutdown_after_get_puts_the_request_back_unhandled():
    lifecycle = Lifecycle()
    lifecycle.stop("test")
    d = delivery()
    handler = RecordingHandler()
    pool(ListSource([d]), handler, lifecycle).step()
    assert handler.handled == []
    assert d.outcome == "retry"
    assert d.delay == 0


@pytest.mark.parametrize("exc", [errors.ServiceUnavailable("db down"), KeyError("bug")])
def test_handler_failure_retries_the_delivery(exc):
    d = delivery(attempt=2)
    pool(ListSource([d]), RecordingHandler(raises=exc)).step()
    assert d.outcome == "retry"
    assert d.delay > 0


def test_queue_outage_stops_the_process_with_a_failure_status():
    lifecycle = Lifecycle()
    workers = pool(ListSource(fail=True), RecordingHandler(), lifecycle, size=2)
    workers.start()
    assert lifecycle.shutdown.wait(10)
    assert workers.join(10)
    assert lifecycle.exit_status == 1
    assert "RabbitMQ is gone" in lifecycle.reason


def test_threads_stop_when_the_flag_is_set():
    lifecycle = Lifecycle()
    workers = pool(ListSource(), RecordingHandler(), lifecycle, size=3)
    workers.start()
    assert threading.active_count() >= 4
    lifecycle.stop("test")
    assert workers.join(5)
    assert lifecycle.exit_status == 0


def test_half_the_threads_take_starts_the_others_only_the_main_lane():
    seen = {}
    everyone_asked = threading.Event()

    class Recording(ListSource):
        def get(self, timeout, *, starts=True):
            seen[threading.current_thread().name] = starts
            if len(seen) == 4:
                everyone_asked.set()
            return super().get(timeout, starts=starts)

    lifecycle = Lifecycle()
    workers = pool(Recording(), RecordingHandler(), lifecycle, size=4)
    workers.start()
    assert everyone_asked.wait(5)
    lifecycle.stop("test")
    assert workers.join(5)
    assert seen == {"worker-0": True, "worker-1": False, "worker-2": True, "worker-3": False}


def test_step_asks_the_queue_for_the_lanes_of_its_thread():
    source = ListSource()
    workers = pool(source, RecordingHandler())
    workers.step(starts=False)
    workers.step()
    assert source.starts == [False, True]
