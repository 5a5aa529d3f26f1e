"""What wraps the worker's step (inspector.worker.middleware): where the fault pause sits
in the step's loop (the crash tests kill a worker there), the task's timing, and the order
in which the loop finishes what it took."""

import pytest

from inspector import errors
from inspector.coordination import LocalCoordinator
from inspector.machine import State
from inspector.worker import metrics as outcomes
from inspector.worker import middleware
from inspector.worker.faults import Faults
from inspector.worker.handler import Handler
from tests.unit.test_handler import (  # noqa: F401 - fixtures
    NODE,
    RecordingAnnouncer,
    RecordingQueue,
    RecordingTasks,
    StoreWrapper,
    deliver,
    store,
)


class Journal:
    """One list of what the store wrote and where the worker paused, in order."""

    def __init__(self):
        self.entries = []


class JournalledStore(StoreWrapper):
    def __init__(self, inner, journal):
        super().__init__(inner)
        self.journal = journal

    def apply(self, change, node=None):
        self.journal.entries.append(("commit", change.request_id))
        return self.inner.apply(change, node)

    def mark_ran(self, request_id):
        self.journal.entries.append(("ran", request_id))
        return self.inner.mark_ran(request_id)

    def finish_request(self, request_id):
        self.journal.entries.append(("done", request_id))
        return self.inner.finish_request(request_id)


class JournalledFaults(Faults):
    """The pause recorded instead of held."""

    def __init__(self, journal, pause):
        super().__init__(pause_before_ack=frozenset(pause))
        self.journal = journal

    def before_ack(self, event, request_id):
        if event in self.pause_before_ack:
            self.journal.entries.append(("pause", request_id))


def journalled(store, tasks, pause):  # noqa: F811
    journal = Journal()
    handler = Handler(
        JournalledStore(store, journal),
        LocalCoordinator(),
        RecordingQueue(),
        tasks,
        faults=JournalledFaults(journal, pause),
    )
    return handler, journal


def test_the_pause_sits_after_ran_before_the_follow_up_and_the_finishes(store):  # noqa: F811
    handler, journal = journalled(
        store, RecordingTasks(announcer=RecordingAnnouncer()), {"continue", "finish"}
    )
    deliver(handler, "inspect", request_id="i1")
    journal.entries.clear()
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    # The follow-up's own link in the same loop, then each request done, the last first.
    assert journal.entries == [
        ("commit", "c1"),
        ("ran", "c1"),
        ("pause", "c1"),
        ("commit", "c1.finish"),
        ("pause", "c1.finish"),
        ("done", "c1.finish"),
        ("done", "c1"),
    ]


def test_a_failed_task_pauses_after_its_error_before_its_finish(store):  # noqa: F811
    tasks = RecordingTasks(fail_on="process", announcer=RecordingAnnouncer())
    handler, journal = journalled(store, tasks, {"continue"})
    deliver(handler, "inspect", request_id="i1")
    journal.entries.clear()
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    assert journal.entries == [
        ("commit", "c1"),
        ("commit", "c1.error"),
        ("done", "c1.error"),
        ("pause", "c1"),
        ("done", "c1"),
    ]
    assert store.get_node(NODE).state == State.ERROR


class Recorder:
    def __init__(self):
        self.durations = []
        self.transitions = []

    def task_duration(self, state, seconds):
        self.durations.append((state, seconds))

    def transition(self, event, outcome):
        self.transitions.append((event, outcome))


class Ticks:
    """A clock that moves 2 s a reading."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 2.0
        return self.now


class Req:
    event = "continue"


class Tr:
    target = State.PROCESSING


def test_the_task_is_timed_and_its_check_returned():
    metrics = Recorder()
    timed = middleware.timed(metrics, lambda node, request, tr: "check", clock=Ticks())
    assert timed(None, Req(), Tr()) == "check"
    assert metrics.durations == [(State.PROCESSING, 2.0)]
    assert metrics.transitions == []


@pytest.mark.parametrize(
    ("exc", "interrupted"),
    [
        (errors.ServiceUnavailable("Ironic is down", service="Ironic"), True),
        (errors.ServiceUnavailable("no service named"), False),
        (RuntimeError("hook exploded"), False),
    ],
)
def test_a_failed_task_is_timed_and_an_outage_counted_interrupted(exc, interrupted):
    metrics = Recorder()

    def task(node, request, transition):
        raise exc

    with pytest.raises(type(exc)):
        middleware.timed(metrics, task, clock=Ticks())(None, Req(), Tr())
    assert metrics.durations == [(State.PROCESSING, 2.0)]
    expected = [("continue", outcomes.INTERRUPTED)] if interrupted else []
    assert metrics.transitions == expected


def test_a_slow_task_waits_before_the_task_not_after():
    order = []

    class Slow(Faults):
        def task_delay(self, event):
            order.append(("delay", event))

    slowed = middleware.slowed(Slow(), lambda node, request, tr: order.append("task"))
    slowed(None, Req(), Tr())
    assert order == [("delay", "continue"), "task"]
