"""Power actions confirmed: the verdict on Ironic's power fields, and whole introspections
through the worker's handler and tasks against the fake Ironic (which loses, refuses,
fails or never finishes an action when told) and a real (SQLite) store."""

import contextlib
import dataclasses
import logging
import time

import pytest

from inspector.broker.message import Request
from inspector.coordination import LocalCoordinator
from inspector.errors import Conflict
from inspector.machine import Event, State
from inspector.worker import power
from inspector.worker.handler import Handler
from inspector.worker.metrics import NoMetrics
from inspector.worker.power import Action, Check, PowerStatus, Verdict, judge
from inspector.worker.tasks import Tasks
from tests import fixtures
from tests.fakes import ironic as fake
from tests.unit.test_handler import FakeDelivery, RecordingQueue
from tests.unit.test_ironic import LOCKED, client, ironic_error

# ------------------------------------------------------------------ the verdict

ON, OFF = "power on", "power off"
PXE_MAC = fixtures.load(fixtures.IPA)["inventory"]["interfaces"][0]["mac_address"]


@pytest.mark.parametrize(
    ("status", "action", "elapsed", "verdict"),
    [
        (PowerStatus(ON, None, None), Action.ON, 1, Verdict.CONFIRMED),
        (PowerStatus(OFF, None, None), Action.OFF, 1, Verdict.CONFIRMED),
        (PowerStatus(OFF, ON, None), Action.ON, 29.9, Verdict.PENDING),
        (PowerStatus(OFF, ON, None), Action.ON, 30, Verdict.FAILED),
        (PowerStatus(OFF, None, fake.ABORTED), Action.ON, 1, Verdict.LOST),
        # A reboot Ironic dropped leaves the power on: last_error tells it.
        (PowerStatus(ON, None, fake.ABORTED), Action.ON, 1, Verdict.LOST),
        (PowerStatus(OFF, None, None), Action.ON, 1, Verdict.LOST),
        (PowerStatus(OFF, None, "Failed to change power state"), Action.ON, 1, Verdict.FAILED),
    ],
)
def test_the_verdict_on_ironics_power_fields(status, action, elapsed, verdict):
    assert judge(status, action, elapsed, timeout=30).verdict is verdict


def test_a_failure_names_ironics_reason():
    outcome = judge(PowerStatus(OFF, None, "IPMI said no"), Action.ON, 1, timeout=30)
    assert outcome.reason == "IPMI said no"
    outcome = judge(PowerStatus(OFF, ON, None), Action.ON, 31, timeout=30)
    assert "within 30 s" in outcome.reason and "target power on" in outcome.reason


def test_a_check_id_says_its_action_and_ask():
    parent = Request(node_uuid="n", event="inspect", request_id="a" * 50)
    first = Check.first(parent, Action.ON).request(parent)
    assert first.event == power.CHECK
    assert first.request_id == "a" * 40 + ".power-on.1"
    assert Check.of(first) == Check(Action.ON, 1, "a" * 40)
    second = Check.of(first).next().request(first)
    assert second.request_id == "a" * 40 + ".power-on.2"
    assert Check.of(dataclasses.replace(first, request_id="x.power-sideways.1")) is None


# ------------------------------------------------------------------ through the handler


class Clock:
    """Wall-clock seconds that only move when the test moves them (from the time it was
    made: requests are stamped with the real time)."""

    def __init__(self):
        self.now = time.time()

    def __call__(self):
        return self.now


class CountingThrottle:
    def __init__(self):
        self.turns = 0

    @contextlib.contextmanager
    def turn(self):
        self.turns += 1
        yield


class RecordingMetrics(NoMetrics):
    def __init__(self):
        self.transitions, self.ended = [], []

    def transition(self, event, outcome):
        self.transitions.append((event, outcome))

    def introspection_ended(self, state, seconds):
        self.ended.append(state)


class Lab:
    """A worker's handler and tasks; `pump` settles the queued requests as workers would
    (a request retried comes back at once: the clock only moves when a test moves it)."""

    def __init__(self, store, ironic, conf):
        self.store, self.ironic, self.conf = store, ironic, conf
        self.clock = Clock()
        self.queue = RecordingQueue()
        self.throttle = CountingThrottle()
        tasks = Tasks(store, ironic, conf, throttle=self.throttle, clock=self.clock)
        self.metrics = RecordingMetrics()
        self.handler = Handler(
            store, LocalCoordinator(), self.queue, tasks, delay=lambda _: 0, metrics=self.metrics
        )
        self.node = ironic.add_node(power_state=OFF)
        ironic.add_port(self.node.uuid, PXE_MAC)
        self.retried = 0

    def deliver(self, request):
        delivery = FakeDelivery(request)
        self.handler.handle(delivery)
        if delivery.outcome == "retry":
            self.retried += 1
            self.queue.put(request.retry(enqueued_at=self.clock() if delivery.renewed else None))
        return delivery

    def pump(self, limit=20):
        """Settle queued requests until none is left or `limit` were; those left."""
        for _ in range(limit):
            if not self.queue.put_requests:
                return []
            self.deliver(self.queue.put_requests.pop(0))
        return self.queue.put_requests

    def inspect(self):
        self.deliver(Request(node_uuid=self.node.uuid, event=Event.INSPECT))

    def finish(self):
        """The ramdisk's data, and its processing up to the power-off."""
        self.store.store_data(self.node.uuid, fixtures.load(fixtures.IPA), processed=False)
        self.deliver(Request(node_uuid=self.node.uuid, event=Event.CONTINUE))

    def record(self):
        return self.store.get_node(self.node.uuid)

    def powers(self):
        return [call.args[1] for call in self.ironic.calls_to("set_power_state")]


@pytest.fixture
def lab(store, ironic, conf):
    return Lab(store, ironic, conf)


def test_a_power_on_ironic_did_is_confirmed_by_one_look(lab):
    lab.inspect()
    assert lab.queue.events() == [power.CHECK]
    looks = len(lab.ironic.calls_to("get_node"))
    assert lab.pump() == []
    assert lab.record().state == State.WAITING and lab.record().error is None
    assert lab.powers() == [ON]
    assert len(lab.ironic.calls_to("get_node")) == looks + 1


def test_a_power_on_ironic_lost_is_asked_again_through_the_throttle_then_confirmed(lab, caplog):
    lab.ironic.plan_power(lab.node.uuid, fake.LOST)
    lab.inspect()
    assert lab.pump() == []
    assert lab.powers() == [ON, ON]
    assert lab.throttle.turns == 2
    assert lab.ironic.boot_devices[lab.node.uuid] == ("pxe", False)
    assert len(lab.ironic.calls_to("set_boot_device")) == 2
    assert lab.record().state == State.WAITING and lab.record().error is None
    assert "Ironic lost the power on (Pending power operation was aborted" in caplog.text
    assert "asking again (2 of 3)" in caplog.text


def test_an_action_lost_every_time_ends_in_error_after_the_attempts(lab):
    lab.ironic.plan_power(lab.node.uuid, fake.LOST, fake.LOST, fake.LOST)
    lab.inspect()
    assert lab.pump() == []
    assert lab.powers() == [ON, ON, ON]
    record = lab.record()
    assert record.state == State.ERROR
    assert record.error == (
        "Failed to power the node on to boot the ramdisk: Ironic lost it 3 times, the last: "
        f"{fake.ABORTED}"
    )


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        # Accepted (202), then failed by the conductor: its last_error.
        (fake.FAILED, "Failed to change power state to 'power on': no route to BMC"),
        # Refused with a 4xx at once: the start task fails with Ironic's message.
        (fake.REFUSED, "Ironic refused to set the power of node"),
    ],
)
def test_a_power_on_ironic_fails_or_refuses_ends_in_error_at_once_with_its_reason(
    lab, outcome, said
):
    lab.ironic.plan_power(lab.node.uuid, outcome, reason="no route to BMC")
    lab.inspect()
    assert lab.pump() == []
    record = lab.record()
    assert record.state == State.ERROR
    assert said in record.error and "no route to BMC" in record.error
    assert lab.powers() == [ON]


def test_a_power_on_that_never_completes_ends_in_error_at_the_bound(lab):
    lab.ironic.plan_power(lab.node.uuid, fake.PENDING)
    lab.inspect()
    assert len(lab.pump(limit=5)) == 1  # checked five times, still pending
    assert lab.record().state == State.WAITING
    lab.clock.now += lab.conf.ironic.power_confirm_timeout + 1
    assert lab.pump() == []
    record = lab.record()
    assert record.state == State.ERROR
    assert "Ironic did not finish the power on within 30 s" in record.error
    assert lab.powers() == [ON]  # pending is not lost: not asked again


def test_ironic_unreachable_during_a_check_is_not_a_verdict(lab):
    lab.inspect()
    lab.ironic.fail_next(3)
    lab.clock.now += 3600  # an outage outlasting the bound fails nothing by itself
    assert len(lab.pump(limit=3)) == 1
    assert lab.record().state == State.WAITING
    assert lab.pump() == []
    assert lab.record().state == State.WAITING and lab.record().error is None


def test_the_bound_of_a_pending_action_counts_from_ironics_return(lab):
    """Ironic away longer than the bound, then back with the target it has not cleared
    yet (its conductor restarting): still pending, not failed; the bound then runs from
    the last check Ironic could not answer."""
    lab.ironic.plan_power(lab.node.uuid, fake.PENDING)
    lab.inspect()
    lab.ironic.fail_next(1)  # Ironic unreachable for one check
    lab.clock.now += 3600
    assert len(lab.pump(limit=2)) == 1  # unanswered, then pending
    assert lab.record().state == State.WAITING
    assert ("check-power", "deferred") in lab.metrics.transitions
    lab.clock.now += lab.conf.ironic.power_confirm_timeout - 1
    assert len(lab.pump(limit=2)) == 1 and lab.record().state == State.WAITING
    lab.clock.now += 2
    assert lab.pump() == [] and lab.record().state == State.ERROR


def test_a_check_of_a_node_that_moved_on_asks_ironic_nothing(lab):
    lab.ironic.plan_power(lab.node.uuid, fake.PENDING)
    lab.inspect()
    lab.deliver(Request(node_uuid=lab.node.uuid, event=Event.ABORT))
    calls = lab.ironic.calls
    lab.clock.now += 3600
    assert lab.pump() == []
    assert lab.ironic.calls == calls
    assert lab.record().error == "Canceled by operator"


def test_a_final_power_off_that_fails_is_recorded_and_the_introspection_stays_finished(lab):
    lab.inspect()
    lab.pump()
    lab.ironic.plan_power(lab.node.uuid, fake.FAILED, reason="BMC unreachable")
    lab.finish()
    assert lab.queue.events() == [power.CHECK]
    finished_at = lab.record().finished_at
    assert lab.pump() == []
    record = lab.record()
    assert record.state == State.FINISHED
    assert record.finished_at == finished_at
    assert record.error == (
        "Failed to power off the node, check its power management configuration: "
        "Failed to change power state to 'power off': BMC unreachable"
    )
    assert lab.powers() == [ON, OFF]
    assert lab.metrics.ended == ["finished"]  # the note is no second end
    assert ("check-power", "failed") in lab.metrics.transitions


def test_a_final_power_off_refused_is_asked_again_then_recorded(lab):
    lab.inspect()
    lab.pump()
    lab.ironic.plan_power(lab.node.uuid, fake.REFUSED, fake.REFUSED, reason="locked")
    lab.finish()
    assert lab.pump() == []
    record = lab.record()
    assert record.state == State.FINISHED
    assert "check its power management configuration: Ironic refused" in record.error
    assert lab.powers() == [ON, OFF, OFF]


def test_a_final_power_off_failed_on_a_node_in_enroll_is_not_recorded(lab, caplog):
    """As ironic-inspector: a node discovery just enrolled may lack power credentials."""
    caplog.set_level(logging.INFO, logger="inspector.worker.checks")
    lab.ironic.nodes[lab.node.uuid] = dataclasses.replace(lab.node, provision_state="enroll")
    lab.inspect()
    lab.pump()
    lab.ironic.plan_power(lab.node.uuid, fake.FAILED, reason="no ipmi_password")
    lab.finish()
    assert lab.pump() == []
    assert lab.record().state == State.FINISHED and lab.record().error is None
    assert "power action failed, ignored in enroll: Failed to change power state" in caplog.text


def test_a_final_power_off_done_is_confirmed(lab):
    lab.inspect()
    lab.pump()
    lab.finish()
    assert lab.pump() == []
    assert lab.record().state == State.FINISHED and lab.record().error is None
    assert lab.ironic.nodes[lab.node.uuid].power_state == OFF


def test_no_check_when_confirmation_is_off(lab):
    lab.conf.set_override("power_confirm_timeout", 0, group="ironic")
    lab.ironic.plan_power(lab.node.uuid, fake.LOST)
    lab.inspect()
    assert lab.queue.events() == []
    assert lab.record().state == State.WAITING


# ------------------------------------------------------------------ the client


def test_a_node_ironic_keeps_locked_past_the_retries_is_refused_not_unavailable(conf):
    conf.set_override("max_retries", 2, group="ironic")

    class Instant:
        def wait(self, timeout=None):
            return False

        def is_set(self):
            return False

    ironic = client(conf, Instant(), *[ironic_error(409, LOCKED)] * 3)
    with pytest.raises(Conflict, match="stayed locked for 3 attempts"):
        ironic.set_power_state("n", ON)
