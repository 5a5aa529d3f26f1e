"""The reboot throttle across simulated worker processes sharing one DLM and store:
power-ons never closer than the quantum; a shutdown while waiting stops the reboot."""

import itertools
import threading
import time

import pytest

from inspector.broker.message import Request
from inspector.lifecycle import Lifecycle
from inspector.worker.tasks import Tasks
from inspector.worker.throttle import Interrupted, RebootThrottle
from tests.fakes.dlm import FakeDLM
from tests.fakes.ironic import FakeIronic
from tests.integration.cluster import wait_for
from tests.unit.test_tasks import started

QUANTUM = 0.05


class TimedIronic(FakeIronic):
    """Records when each power-on call reached 'Ironic'."""

    def __init__(self):
        super().__init__()
        self.power_ons: list[float] = []

    def set_power_state(self, node_uuid, target):
        self.power_ons.append(time.monotonic())
        super().set_power_state(node_uuid, target)


def start_all(tasks: Tasks, nodes, errors: list) -> None:
    for node in nodes:
        try:
            tasks.start(node, Request(node_uuid=node.uuid, event="inspect"))
        except Interrupted as exc:
            errors.append(exc)


def test_power_ons_across_processes_are_never_closer_than_the_quantum(store, conf):
    ironic, dlm = TimedIronic(), FakeDLM()
    nodes = [started(store, ironic.add_node(power_state="power off").uuid) for _ in range(30)]
    threads, errors = [], []
    for index in range(3):  # three processes, one worker thread each
        throttle = RebootThrottle(dlm.member(f"p{index}"), store, Lifecycle(), QUANTUM)
        tasks = Tasks(store, ironic, conf, throttle=throttle)
        share = nodes[index::3]
        threads.append(threading.Thread(target=start_all, args=(tasks, share, errors)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    times = sorted(ironic.power_ons)
    assert len(times) == 30
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= QUANTUM, gaps


def test_a_dead_holder_still_spaces_the_next_power_on(store, conf):
    """The holder died right after powering on: its lease is gone, but the recorded
    power-on makes the next holder wait out the rest of the quantum."""
    ironic, dlm = TimedIronic(), FakeDLM()
    node_a, node_b = (started(store, ironic.add_node().uuid) for _ in range(2))
    quantum = 0.3
    dead = dlm.member("dead")
    # The clock read first: the store records its power-on at or after it, however long
    # a loaded machine takes in between, so the gap measured below is never shortened.
    ironic.power_ons.append(time.monotonic())
    store.mark_power_on("dead")
    dead.crash()
    survivor = RebootThrottle(dlm.member("alive"), store, Lifecycle(), quantum)
    Tasks(store, ironic, conf, throttle=survivor).start(node_b, Request(node_b.uuid, "inspect"))
    assert ironic.power_ons[1] - ironic.power_ons[0] >= quantum - 0.01  # store clock rounding
    assert node_a.uuid not in [c.args[0] for c in ironic.calls_to("set_power_state")]


def test_shutdown_while_waiting_for_a_turn_stops_the_reboot(store, conf):
    ironic, dlm = TimedIronic(), FakeDLM()
    holder_node, waiting_node = (started(store, ironic.add_node().uuid) for _ in range(2))
    holder = RebootThrottle(dlm.member("a"), store, Lifecycle(), 30.0)
    waiting_lifecycle = Lifecycle()
    waiter = RebootThrottle(dlm.member("b"), store, waiting_lifecycle, 30.0)
    holder_lifecycle = holder.lifecycle
    first = threading.Thread(
        target=Tasks(store, ironic, conf, throttle=holder).start,
        args=(holder_node, Request(holder_node.uuid, "inspect")),
    )
    first.start()  # powers on, then holds the lock for 30 s
    try:
        wait_for(lambda: ironic.power_ons, 5, 0.005, "the holder's power-on")
        waiting_lifecycle.stop("SIGTERM")
        with pytest.raises(Interrupted):
            Tasks(store, ironic, conf, throttle=waiter).start(
                waiting_node, Request(waiting_node.uuid, "inspect")
            )
        assert [c.args[0] for c in ironic.calls_to("set_power_state")] == [holder_node.uuid]
    finally:
        holder_lifecycle.stop("test over")  # cuts the holder's 30 s wait short
        first.join(5)
    assert not first.is_alive()


def test_zero_disables_the_throttle(store, conf):
    ironic, dlm = TimedIronic(), FakeDLM()
    throttle = RebootThrottle(dlm.member("a"), store, Lifecycle(), 0.0)
    for _ in range(3):
        node = started(store, ironic.add_node().uuid)
        Tasks(store, ironic, conf, throttle=throttle).start(node, Request(node.uuid, "inspect"))
    assert len(ironic.power_ons) == 3
    assert store.last_power_on() is None
    assert dlm.leases == {}
