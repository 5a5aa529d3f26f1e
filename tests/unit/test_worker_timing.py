"""inspector.worker.timing: each backend call's time reaches the recorder, results and
errors pass through unchanged, and the wait for a delivery is not counted."""

import contextlib

import pytest

from inspector.worker import timing


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def __call__(self, backend: str, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append((backend, seconds))

    def backends(self) -> list[str]:
        return [backend for backend, _ in self.calls]


class Store:
    version = 3

    def load(self, node: str) -> str:
        return f"node {node}"

    def broken(self) -> None:
        raise ValueError("no")


def test_method_calls_are_timed_and_pass_through():
    record = Recorder()
    store = timing.Timed(Store(), timing.DATABASE, record)
    assert store.load("a") == "node a"
    assert store.version == 3  # attributes are not timed
    with pytest.raises(ValueError, match="no"):
        store.broken()
    assert record.backends() == ["database", "database"]


class Coordinator:
    def __init__(self) -> None:
        self.events: list[str] = []

    @contextlib.contextmanager
    def try_lock(self, name: str):
        self.events.append(f"acquire {name}")
        try:
            yield True
        finally:
            self.events.append(f"release {name}")


def test_lock_is_timed_on_enter_and_exit():
    record = Recorder()
    real = Coordinator()
    coordinator = timing.TimedCoordinator(real, record)
    with coordinator.try_lock("n1") as held:
        assert held
        assert real.events == ["acquire n1"]
        assert record.backends() == ["DLM"]
    assert real.events == ["acquire n1", "release n1"]
    assert record.backends() == ["DLM", "DLM"]


def test_lock_released_and_timed_when_the_body_raises():
    record = Recorder()
    real = Coordinator()
    with pytest.raises(RuntimeError), timing.TimedCoordinator(real, record).try_lock("n"):
        raise RuntimeError("task failed")
    assert real.events == ["acquire n", "release n"]
    assert record.backends() == ["DLM", "DLM"]


class Delivery:
    request = "req"

    def __init__(self) -> None:
        self.acked = False

    def ack(self) -> None:
        self.acked = True


class Queue:
    def __init__(self, deliveries):
        self.deliveries = list(deliveries)
        self.put_count = 0

    def get(self, timeout: float, *, starts: bool = True):
        return self.deliveries.pop(0) if self.deliveries else None

    def put(self, request) -> None:
        self.put_count += 1


def test_queue_put_and_settling_timed_not_the_wait():
    record = Recorder()
    real = Delivery()
    queue = timing.TimedQueue(Queue([real]), record)
    delivery = queue.get(1.0)
    assert record.calls == []  # waiting for work is idle time
    assert delivery.request == "req"
    delivery.ack()
    assert real.acked
    queue.put("follow-up")
    assert queue.get(1.0) is None
    assert record.backends() == ["queue", "queue"]
