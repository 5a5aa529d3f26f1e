"""inspector.worker.timing: each backend call's time reaches the recorder, results and
errors pass through unchanged, the wait for a delivery is not counted, and the timed
store has every method the request threads call."""

import ast
import contextlib
import pathlib

import pytest

import inspector
from inspector import errors
from inspector.broker.message import Request
from inspector.worker import timing
from tests.fakes.ironic import FakeIronic


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []

    def __call__(self, backend: str, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append((backend, seconds))

    def backends(self) -> list[str]:
        return [backend for backend, _ in self.calls]


def test_store_calls_are_timed_and_pass_through(store):
    record = Recorder()
    timed = timing.TimedStore(store, record)
    assert timed.last_power_on() is None
    timed.mark_power_on("worker-1")
    assert timed.last_power_on().holder == "worker-1"
    with pytest.raises(errors.NotFound):
        timed.get_node("missing")
    assert timed.clock() is not None  # the clock is no database call
    assert record.backends() == ["database"] * 4


#: The modules whose store calls run on the request threads (the store TimedStore wraps):
#: the handler, what it hands the store to (commit, removal, power checks), the tasks and
#: the throttle.
REQUEST_MODULES = (
    "worker/handler.py",
    "worker/removal.py",
    "worker/checks.py",
    "worker/tasks.py",
    "worker/throttle.py",
    "commit.py",
)


def store_calls() -> set[str]:
    """Every `self.store.<name>` and `store.<name>` the request threads' modules use."""
    names = set()
    for module in REQUEST_MODULES:
        path = pathlib.Path(inspector.__file__).parent / module
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "store") or (
                isinstance(owner, ast.Attribute)
                and owner.attr == "store"
                and isinstance(owner.value, ast.Name)
                and owner.value.id == "self"
            ):
                names.add(node.attr)
    return names


def test_the_timed_store_has_every_call_of_the_request_threads(store):
    used = store_calls()
    assert {"load", "apply", "clock"} <= used  # the scan sees the handler's calls
    timed = timing.TimedStore(store, Recorder())
    assert sorted(name for name in used if not hasattr(timed, name)) == []


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

    def try_lease(self, name: str):
        self.events.append(f"lease {name}")


def test_lock_is_timed_on_enter_and_exit():
    record = Recorder()
    real = Coordinator()
    coordinator = timing.TimedDLM(real, record)
    with coordinator.try_lock("n1") as held:
        assert held
        assert real.events == ["acquire n1"]
        assert record.backends() == ["DLM"]
    assert real.events == ["acquire n1", "release n1"]
    assert record.backends() == ["DLM", "DLM"]
    assert coordinator.try_lease("n2") is None
    assert record.backends() == ["DLM"] * 3


def test_lock_released_and_timed_when_the_body_raises():
    record = Recorder()
    real = Coordinator()
    with pytest.raises(RuntimeError), timing.TimedDLM(real, record).try_lock("n"):
        raise RuntimeError("task failed")
    assert real.events == ["acquire n", "release n"]
    assert record.backends() == ["DLM", "DLM"]


class Delivery:
    request = "req"
    error = None

    def __init__(self) -> None:
        self.settled: list[str] = []

    def ack(self) -> None:
        self.settled.append("ack")

    def retry(self, delay: float, *, renewed: bool = False) -> None:
        self.settled.append(f"retry {delay}{' renewed' if renewed else ''}")

    def dead_letter(self, reason: str) -> None:
        self.settled.append(f"dead: {reason}")


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
    real = [Delivery(), Delivery(), Delivery()]
    queue = timing.TimedQueue(Queue(real), record)
    first = queue.get(1.0)
    assert record.calls == []  # waiting for work is idle time
    assert (first.request, first.error) == ("req", None)
    first.ack()
    queue.get(1.0).retry(0.5)
    queue.get(1.0).dead_letter("no")
    assert [d.settled for d in real] == [["ack"], ["retry 0.5"], ["dead: no"]]
    queue.put(Request(node_uuid="n", event="inspect"))
    assert queue.get(1.0) is None
    assert record.backends() == ["queue"] * 4


def test_ironic_calls_are_timed_and_pass_through():
    record = Recorder()
    fake = FakeIronic()
    node = fake.add_node()
    ironic = timing.TimedIronic(fake, record)
    assert ironic.get_node(node.uuid) == node
    port = ironic.create_port(node.uuid, "52:54:00:00:00:01", physical_network="physnet1")
    assert port.physical_network == "physnet1"
    assert ironic.list_ports(node.uuid) == [port]
    with pytest.raises(errors.NotFound):
        ironic.get_node("missing")
    assert record.backends() == ["Ironic"] * 4
    assert [call.name for call in fake.history] == [
        "get_node",
        "create_port",
        "list_ports",
        "get_node",
    ]
