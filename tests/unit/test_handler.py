"""The worker's step, one request at a time: real store (SQLite), in-process locks,
recording queue and tasks, a fake clock."""

import dataclasses
import datetime
import logging

import pytest

from inspector import errors
from inspector.broker.message import DELETE, EXPIRE, Request
from inspector.coordination import LocalCoordinator
from inspector.machine import (
    DEJA_VU_REASON,
    TIMEOUT_REASON,
    Event,
    Machine,
    RequestStatus,
    State,
    Task,
)
from inspector.store import Change, Store, schema
from inspector.worker import handler as handler_module
from inspector.worker.delivery import lock_name
from inspector.worker.handler import Handler
from inspector.worker.tasks import NoTasks
from tests import seed

NODE = "6f6e3e5e-0c36-4bd6-9d5a-1b2f4b4b0d6a"


class FakeClock:
    def __init__(self):
        self.now = datetime.datetime(2026, 11, 22, 12, 0, 0)

    def __call__(self):
        self.now += datetime.timedelta(seconds=1)
        return self.now


@dataclasses.dataclass
class FakeDelivery:
    request: Request | None
    error: str | None = None
    outcome: str | None = None
    delay: float | None = None
    renewed: bool = False

    def ack(self):
        assert self.outcome is None
        self.outcome = "ack"

    def retry(self, delay, *, renewed=False):
        assert self.outcome is None
        self.outcome, self.delay, self.renewed = "retry", delay, renewed

    def dead_letter(self, reason):
        assert self.outcome is None
        self.outcome, self.error = "dead", reason


class RecordingQueue:
    def __init__(self):
        self.put_requests = []

    def put(self, request):
        self.put_requests.append(request)

    def events(self):
        return [r.event for r in self.put_requests]


class RecordingTasks(NoTasks):
    """The table's tasks recorded (start, process, enroll; reapply as process), or
    failing on one; the end announced when an announcer is set."""

    def __init__(self, fail_on=None, announcer=None):
        self.calls = []
        self.fail_on = fail_on
        self.announcer = announcer

    def has_work(self, transition):
        if transition.task is Task.END:
            return self.announcer is not None
        return transition.task is not None

    def run(self, node, request, transition):
        if transition.task is Task.END:
            self.announcer.introspection_ended(node.uuid)
            return
        name = "process" if transition.task is Task.REAPPLY else transition.task.value
        self.calls.append((name, node.uuid))
        if self.fail_on == name == "start":
            raise errors.Conflict("Ironic refused the boot device")
        if self.fail_on == name == "process":
            raise RuntimeError("hook exploded")
        if self.fail_on == "process-outage" and name == "process":
            self.fail_on = None  # the backend comes back for the next attempt
            raise errors.ServiceUnavailable("Ironic is down", service="Ironic")


class RecordingAnnouncer:
    def __init__(self):
        self.ended = []

    def introspection_started(self, node_uuid, macs):
        pass

    def introspection_ended(self, node_uuid):
        self.ended.append(node_uuid)


class StoreWrapper:
    """The real store, with the methods a test overrides."""

    def __init__(self, inner):
        self.inner = inner
        self.clock = inner.clock

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    db = Store.from_url(url, clock=FakeClock())
    yield db
    db.close()


@pytest.fixture
def queue():
    return RecordingQueue()


@pytest.fixture
def tasks():
    return RecordingTasks()


@pytest.fixture
def coordinator():
    return LocalCoordinator()


@pytest.fixture
def handler(store, coordinator, queue, tasks):
    return Handler(store, coordinator, queue, tasks)


def deliver(handler, event, request_id=None, node=NODE, **kwargs):
    request = Request(node_uuid=node, event=event, **kwargs)
    if request_id:
        request = dataclasses.replace(request, request_id=request_id)
    delivery = FakeDelivery(request)
    handler.handle(delivery)
    return delivery


def test_inspect_creates_the_node_and_applies_wait_at_once(handler, store, queue, tasks):
    delivery = deliver(handler, "inspect", request_id="r1")
    assert delivery.outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.WAITING
    assert node.started_at is not None and node.finished_at is None
    assert queue.events() == []  # applied under the step's lock, not enqueued
    assert tasks.calls == [("start", NODE)]
    assert store.find_request("r1").status == "done"
    assert store.find_request("r1.wait").status == "done"


def test_a_whole_introspection(handler, store, queue):
    for event in ("inspect", "continue"):
        assert deliver(handler, event).outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.FINISHED
    assert node.finished_at is not None and node.error is None
    assert queue.events() == []
    path = [(r.source_state, r.event, r.target_state) for r in store.history(NODE)]
    assert path == [
        (None, "inspect", "starting"),
        ("starting", "wait", "waiting"),
        ("waiting", "continue", "processing"),
        ("processing", "finish", "finished"),
    ]


def test_follow_up_ids_derive_from_the_request(handler, store):
    deliver(handler, "inspect", request_id="abc")
    history = [(r.request_id, r.event) for r in store.history(NODE)]
    assert history == [("abc", "inspect"), ("abc.wait", "wait")]


def test_a_follow_up_whose_transition_runs_a_task_is_enqueued(handler, store, queue, tasks):
    assert deliver(handler, "enroll", request_id="d1").outcome == "ack"
    assert store.get_node(NODE).state == State.ENROLLING
    assert [(r.event, r.request_id) for r in queue.put_requests] == [("continue", "d1.continue")]
    assert ("process", NODE) not in tasks.calls  # processing runs in its own step
    assert deliver(handler, "continue", request_id="d1.continue").outcome == "ack"
    assert store.get_node(NODE).state == State.FINISHED


def test_a_follow_up_that_loses_a_race_is_enqueued(store, coordinator, queue, tasks):
    class RacingStore(StoreWrapper):
        """Another writer bumps the version as the follow-up is read."""

        def load(self, uuid, request_id):
            node, seen = self.inner.load(uuid, request_id)
            if request_id.endswith(".wait"):
                seed.move(self.inner, uuid, node.state)
            return node, seen

    handler = Handler(RacingStore(store), coordinator, queue, tasks)
    assert deliver(handler, "inspect", request_id="i1").outcome == "ack"
    assert store.get_node(NODE).state == State.STARTING
    assert [r.request_id for r in queue.put_requests] == ["i1.wait"]
    assert store.find_request("i1").status == RequestStatus.DONE


def test_a_worker_killed_after_the_follow_up_leaves_a_parent_that_is_consumed(
    store, coordinator, queue, tasks
):
    class DyingStore(StoreWrapper):
        """The worker dies after the follow-up is applied, before the parent is done."""

        def finish_request(self, request_id):
            if request_id == "c1":
                raise KeyboardInterrupt("killed")
            return self.inner.finish_request(request_id)

    handler = Handler(store, coordinator, queue, tasks)
    deliver(handler, "inspect")
    dying = Handler(DyingStore(store), coordinator, queue, tasks)
    with pytest.raises(KeyboardInterrupt):
        deliver(dying, "continue", request_id="c1")
    assert store.get_node(NODE).state == State.FINISHED
    assert store.find_request("c1").status == RequestStatus.RAN
    # Redelivered: the node moved on since, so it is consumed; no deja vu, no rerun.
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.FINISHED and node.error is None
    assert tasks.calls.count(("process", NODE)) == 1
    assert store.find_request("c1").status == RequestStatus.DONE


def test_busy_lock_leaves_the_request_for_later(handler, store, coordinator):
    deliver(handler, "inspect")
    with coordinator.try_lock(lock_name(NODE)) as held:
        assert held
        delivery = deliver(handler, "continue", attempt=3)
    assert delivery.outcome == "retry"
    assert delivery.delay == handler_module.backoff(3)
    assert store.get_node(NODE).state == State.WAITING


def test_backoff_grows_and_is_capped():
    delays = [handler_module.backoff(n) for n in range(20)]
    assert delays == sorted(delays)
    assert delays[0] > 0
    assert delays[-1] == 2.0


def test_invalid_transition_is_consumed_and_recorded(handler, store, tasks):
    deliver(handler, "inspect")
    delivery = deliver(handler, "finish", request_id="bad")
    assert delivery.outcome == "ack"
    assert store.get_node(NODE).state == State.WAITING
    record = store.find_request("bad")
    assert record.status == "rejected"
    assert "not allowed in state waiting" in record.reason
    assert tasks.calls == [("start", NODE)]


def test_missing_node_is_retried_later(handler, store):
    delivery = deliver(handler, "continue", attempt=0)
    assert delivery.outcome == "retry"
    with pytest.raises(errors.NotFound):
        store.get_node(NODE)


def test_done_request_seen_again_is_consumed_without_its_task(handler, store, tasks, queue):
    deliver(handler, "inspect", request_id="r1")
    delivery = deliver(handler, "inspect", request_id="r1")
    assert delivery.outcome == "ack"
    assert tasks.calls == [("start", NODE)]
    assert queue.events() == []
    assert store.get_node(NODE).state == State.WAITING


def _crash_after_commit(store, event, source, target, request_id):
    """What a worker killed after committing (and maybe running the task) leaves."""
    node = store.get_node(NODE)
    store.apply(
        Change(
            node_uuid=NODE,
            expected_version=node.version,
            request_id=request_id,
            event=event,
            source=source,
            target=target,
        )
    )


class DiesBeforeTheFollowUp(StoreWrapper):
    """The worker dies between the end of a request's task and its follow-up: at the
    read of the follow-up's row, once."""

    def __init__(self, inner, follow_up):
        super().__init__(inner)
        self.follow_up = follow_up

    def load(self, uuid, request_id):
        if request_id == self.follow_up:
            self.follow_up = None
            raise KeyboardInterrupt("killed")
        return self.inner.load(uuid, request_id)


def killed_after_processing(store, coordinator, queue, tasks, request_id="c1"):
    """inspect, then a `continue` whose worker dies after its processing ran, before its
    follow-up `finish`: the request is left `ran` and unacknowledged."""
    deliver(Handler(store, coordinator, queue, tasks), "inspect")
    dying = Handler(DiesBeforeTheFollowUp(store, f"{request_id}.finish"), coordinator, queue, tasks)
    with pytest.raises(KeyboardInterrupt):
        deliver(dying, "continue", request_id=request_id)
    assert store.get_node(NODE).state == State.PROCESSING
    assert store.find_request(request_id).status == RequestStatus.RAN
    assert tasks.calls.count(("process", NODE)) == 1


def test_strict_event_seen_again_after_its_task_ran_gets_its_follow_up(store, coordinator, queue):
    tasks = RecordingTasks(announcer=RecordingAnnouncer())
    killed_after_processing(store, coordinator, queue, tasks)
    handler = Handler(store, coordinator, queue, tasks)
    # Redelivered on the node as the request left it: the follow-up, not the task again.
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == Machine().advance(State.PROCESSING, Event.FINISH).target
    assert node.state == State.FINISHED and node.error is None
    assert node.finished_at is not None
    assert tasks.calls.count(("process", NODE)) == 1
    assert queue.events() == []
    finishes = [r for r in store.history(NODE) if r.event == "finish"]
    assert [(r.request_id, r.status) for r in finishes] == [("c1.finish", RequestStatus.DONE)]
    assert store.find_request("c1").status == RequestStatus.DONE
    assert tasks.announcer.ended == [NODE]  # the follow-up's own task, the end announced
    # Delivered once more: done, consumed; nothing applied twice.
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    assert [r.event for r in store.history(NODE)] == ["inspect", "wait", "continue", "finish"]
    assert tasks.calls.count(("process", NODE)) == 1
    assert tasks.announcer.ended == [NODE]


def test_the_late_follow_up_is_logged_once(handler, store, coordinator, queue, tasks, caplog):
    killed_after_processing(store, coordinator, queue, tasks)
    with caplog.at_level(logging.INFO, logger=handler_module.__name__):
        deliver(handler, "continue", request_id="c1")
    said = [r for r in caplog.records if "already ran" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO]
    assert "applying finish now" in said[0].getMessage()


@pytest.mark.parametrize(
    ("event", "target", "said"),
    [
        ("continue", "processing", ": running its process task now"),
        ("abort", "error", ", with no task to run: done"),
    ],
)
def test_a_request_applied_before_says_what_the_worker_does(
    handler, store, caplog, event, target, said
):
    deliver(handler, "inspect")
    _crash_after_commit(store, event, "waiting", target, "r2")
    with caplog.at_level(logging.INFO, logger=handler_module.__name__):
        assert deliver(handler, event, request_id="r2").outcome == "ack"
    [line] = [r.getMessage() for r in caplog.records if "by the API" in r.getMessage()]
    assert line == (
        f"[node {NODE} req r2 {event}] applied before (by the API, or by a worker that died)" + said
    )


def test_the_late_follow_up_is_enqueued_when_it_cannot_be_applied_now(
    store, coordinator, queue, tasks
):
    killed_after_processing(store, coordinator, queue, tasks)

    class Racing(StoreWrapper):
        """Another writer moves the node as the follow-up commits."""

        def apply(self, change, node=None):
            if change.request_id == "c1.finish":
                raise errors.NodeBusy("moved")
            return self.inner.apply(change, node)

    handler = Handler(Racing(store), coordinator, queue, tasks)
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    assert [(r.event, r.request_id) for r in queue.put_requests] == [("finish", "c1.finish")]
    assert store.find_request("c1").status == RequestStatus.DONE
    assert tasks.calls.count(("process", NODE)) == 1


def test_strict_event_whose_task_ran_is_consumed_when_the_node_moved_on(
    handler, store, coordinator, queue, tasks
):
    killed_after_processing(store, coordinator, queue, tasks)
    # Before the redelivery, the introspection timed out (another worker applied it).
    assert deliver(handler, "timeout", request_id="t1").outcome == "ack"
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.ERROR and node.error == TIMEOUT_REASON
    assert store.find_request("c1.finish") is None
    assert store.find_request("c1").status == RequestStatus.DONE
    assert tasks.calls.count(("process", NODE)) == 1
    assert queue.events() == []


def test_a_second_continue_request_before_processing_finished_is_deja_vu(
    handler, store, tasks, queue
):
    deliver(handler, "inspect")
    # The worker of c1 died mid-processing; a second POST of the data made c2.
    _crash_after_commit(store, "continue", "waiting", "processing", "c1")
    assert deliver(handler, "continue", request_id="c2").outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.ERROR
    assert node.error == DEJA_VU_REASON
    assert ("process", NODE) not in tasks.calls
    # c1 redelivered: the node moved on, so it is consumed; nothing processed.
    assert deliver(handler, "continue", request_id="c1").outcome == "ack"
    assert store.get_node(NODE).state == State.ERROR
    assert ("process", NODE) not in tasks.calls
    assert store.find_request("c1.finish") is None
    assert store.find_request("c1").status == RequestStatus.DONE


def test_strict_event_whose_task_did_not_finish_runs_it_again(handler, store, tasks, queue):
    deliver(handler, "inspect")
    # The worker died mid-processing: the request is applied, its task never marked ran.
    _crash_after_commit(store, "continue", "waiting", "processing", "c1")
    assert store.find_request("c1").status == RequestStatus.APPLIED
    delivery = deliver(handler, "continue", request_id="c1")
    assert delivery.outcome == "ack"
    assert tasks.calls.count(("process", NODE)) == 1
    # Its follow-up ends the introspection as usual.
    assert store.get_node(NODE).state == State.FINISHED
    assert store.find_request("c1").status == RequestStatus.DONE
    assert queue.events() == []


def test_a_strict_event_is_marked_ran_before_its_follow_ups(store, coordinator, queue, tasks):
    seen = []

    class Watching(StoreWrapper):
        def apply(self, change, node=None):
            if change.request_id == "c1.finish":
                seen.append(self.inner.find_request("c1").status)
            return self.inner.apply(change, node)

    handler = Handler(Watching(store), coordinator, queue, tasks)
    deliver(handler, "inspect")
    deliver(handler, "continue", request_id="c1")
    assert seen == [RequestStatus.RAN]
    assert store.get_node(NODE).state == State.FINISHED
    assert store.find_request("c1").status == RequestStatus.DONE


def test_reentrant_event_seen_again_runs_its_task_again(handler, store, tasks, queue):
    deliver(handler, "inspect", request_id="i1")
    assert store.get_node(NODE).state == State.WAITING
    tasks.calls.clear()
    # A redelivered inspect whose task never finished runs it again, once.
    store.apply(
        Change(
            node_uuid=NODE,
            expected_version=store.get_node(NODE).version,
            request_id="i2",
            event="abort",
            source="waiting",
            target="error",
        )
    )
    _crash_after_commit(store, "inspect", "error", "starting", "i3")
    delivery = deliver(handler, "inspect", request_id="i3")
    assert delivery.outcome == "ack"
    assert tasks.calls == [("start", NODE)]
    assert queue.events() == []
    assert store.get_node(NODE).state == State.WAITING
    assert store.find_request("i3").status == "done"


def test_applied_request_superseded_by_a_later_change_is_consumed(handler, store, tasks):
    deliver(handler, "inspect")
    _crash_after_commit(store, "continue", "waiting", "processing", "c1")
    _crash_after_commit(store, "error", "processing", "error", "e1")  # the node moved on
    tasks.calls.clear()
    delivery = deliver(handler, "continue", request_id="c1")
    assert delivery.outcome == "ack"
    assert tasks.calls == []
    assert store.get_node(NODE).state == State.ERROR


def test_abort_sets_the_operator_message(handler, store):
    for event in ("inspect", "abort"):
        deliver(handler, event)
    node = store.get_node(NODE)
    assert node.state == State.ERROR
    assert node.error == "Canceled by operator"
    assert node.finished_at is not None


def test_restart_after_error_clears_error_and_finished_at(handler, store):
    for event in ("inspect", "abort", "inspect"):
        deliver(handler, event)
    node = store.get_node(NODE)
    assert node.state == State.WAITING
    assert node.error is None and node.finished_at is None


@pytest.mark.parametrize(
    ("fail_on", "events"), [("start", ["inspect"]), ("process", ["inspect", "continue"])]
)
def test_failing_task_sends_the_node_to_error(store, coordinator, queue, fail_on, events):
    handler = Handler(store, coordinator, queue, RecordingTasks(fail_on=fail_on))
    for event in events:
        assert deliver(handler, event).outcome == "ack"
    node = store.get_node(NODE)
    assert node.state == State.ERROR
    assert node.error.startswith(("starting failed", "processing failed"))
    assert queue.events() == []


def test_failing_task_announces_the_end_and_finishes_its_error(store, coordinator, queue):
    tasks = RecordingTasks(fail_on="process", announcer=RecordingAnnouncer())
    handler = Handler(store, coordinator, queue, tasks)
    deliver(handler, "inspect")
    assert deliver(handler, "continue", request_id="ramdisk-1").outcome == "ack"
    assert store.get_node(NODE).state == State.ERROR
    # The PXE firewalls hear that the introspection ended, as for any other end...
    assert tasks.announcer.ended == [NODE]
    # ...and both the failed request and its error are done, not left `applied`.
    assert store.find_request("ramdisk-1").status == RequestStatus.DONE
    assert store.find_request("ramdisk-1.error").status == RequestStatus.DONE


def test_outage_in_a_task_leaves_the_request_for_a_rerun_even_when_strict(
    store, coordinator, queue
):
    tasks = RecordingTasks(fail_on="process-outage")
    handler = Handler(store, coordinator, queue, tasks)
    deliver(handler, "inspect")
    with pytest.raises(errors.ServiceUnavailable):
        deliver(handler, "continue", request_id="ramdisk-1")
    assert store.get_node(NODE).state == State.PROCESSING
    assert store.find_request("ramdisk-1").status == RequestStatus.INTERRUPTED
    # Redelivered: a strict event, but its task is known unfinished: no deja vu.
    assert deliver(handler, "continue", request_id="ramdisk-1").outcome == "ack"
    assert [call for call, _ in tasks.calls].count("process") == 2
    assert store.get_node(NODE).state == State.FINISHED
    assert store.find_request("ramdisk-1").status == RequestStatus.DONE
    assert queue.events() == []


def _finished_node(handler, store):
    for event in ("inspect", "continue"):
        deliver(handler, event)
    return store.get_node(NODE)


def _epoch(moment: datetime.datetime) -> float:
    return moment.replace(tzinfo=datetime.UTC).timestamp()


def test_expire_removes_an_ended_introspection(handler, store):
    node = _finished_node(handler, store)
    assert node.state == State.FINISHED
    later = _epoch(node.finished_at) + 1
    assert deliver(handler, EXPIRE, enqueued_at=later).outcome == "ack"
    with pytest.raises(errors.NotFound):
        store.get_node(NODE)
    assert deliver(handler, EXPIRE, enqueued_at=later).outcome == "ack"  # gone: consumed


def test_expire_keeps_a_node_restarted_since_the_request(handler, store):
    node = _finished_node(handler, store)
    stale = Request(node_uuid=NODE, event=EXPIRE, enqueued_at=_epoch(node.finished_at) + 0.5)
    deliver(handler, "inspect", request_id="again")
    delivery = FakeDelivery(stale)
    handler.handle(delivery)
    assert delivery.outcome == "ack"
    assert store.get_node(NODE).state == State.WAITING
    # Restarted and ended again after the request was made: kept as well.
    deliver(handler, "continue")
    handler.handle(FakeDelivery(stale))
    assert store.get_node(NODE).state == State.FINISHED


def test_delete_removes_the_node_and_is_always_consumed(handler, store):
    deliver(handler, "inspect")
    assert deliver(handler, DELETE).outcome == "ack"
    with pytest.raises(errors.NotFound):
        store.get_node(NODE)
    assert store.history(NODE) == []
    assert deliver(handler, DELETE).outcome == "ack"


def test_malformed_request_is_dead_lettered(handler):
    delivery = FakeDelivery(None, error="not JSON")
    handler.handle(delivery)
    assert delivery.outcome == "dead"
    assert delivery.error == "not JSON"


def test_unknown_event_is_dead_lettered(handler):
    assert deliver(handler, "explode").outcome == "dead"


def test_too_many_attempts_are_dead_lettered(handler):
    delivery = deliver(handler, "continue", attempt=handler.max_attempts)
    assert delivery.outcome == "dead"
    assert "attempts" in delivery.error


def test_lost_compare_and_swap_is_retried(store, coordinator, queue, tasks):
    class RacingStore(StoreWrapper):
        """Another writer bumps the version between our read and our write."""

        def load(self, uuid, request_id):
            node, seen = self.inner.load(uuid, request_id)
            seed.move(self.inner, uuid, node.state)
            return node, seen

    handler = Handler(store, coordinator, queue, tasks)
    deliver(handler, "inspect")
    racing = Handler(RacingStore(store), coordinator, queue, tasks)
    delivery = deliver(racing, "continue", request_id="c1")
    assert delivery.outcome == "retry"
    assert store.get_node(NODE).state == State.WAITING
    assert store.find_request("c1") is None


def test_ramdisk_data_before_wait_is_retried_not_refused(handler, store):
    deliver(handler, "inspect")
    deliver(handler, "abort")
    # The API recorded a new start; its request is still on its way to a worker.
    _crash_after_commit(store, "inspect", "error", "starting", "i2")
    delivery = deliver(handler, "continue", request_id="early")
    assert delivery.outcome == "retry"
    assert store.find_request("early") is None
    deliver(handler, "inspect", request_id="i2")
    assert store.get_node(NODE).state == State.WAITING
    assert deliver(handler, "continue", request_id="early").outcome == "ack"
    assert store.get_node(NODE).state == State.FINISHED


class FailingAnnouncer(RecordingAnnouncer):
    """An end's task that fails, not as an outage (a bug, a refused write)."""

    def introspection_ended(self, node_uuid):
        super().introspection_ended(node_uuid)
        raise RuntimeError("the announcement exploded")


@pytest.mark.parametrize("fail_on", [None, "process"])
def test_a_failing_end_task_leaves_the_ended_introspection_as_it_is(
    store, coordinator, queue, fail_on, caplog
):
    """The end's task (history, the firewalls' announcement) runs once the node is in a
    final state: its failure is logged and the request consumed; the node keeps its end
    (finished, or its first error) instead of the request failing out of the handler."""
    tasks = RecordingTasks(fail_on=fail_on, announcer=FailingAnnouncer())
    handler = Handler(store, coordinator, queue, tasks)
    deliver(handler, "inspect")
    with caplog.at_level(logging.ERROR, logger=handler_module.__name__):
        assert deliver(handler, "continue", request_id="ramdisk-1").outcome == "ack"
    node = store.get_node(NODE)
    if fail_on is None:
        assert (node.state, node.error) == (State.FINISHED, None)
        assert store.find_request("ramdisk-1.finish").status == RequestStatus.DONE
    else:
        assert node.state == State.ERROR and node.error.startswith("processing failed")
        assert store.find_request("ramdisk-1.error").status == RequestStatus.DONE
    assert store.find_request("ramdisk-1").status == RequestStatus.DONE
    assert tasks.announcer.ended == [NODE]
    assert "the announcement exploded" in caplog.text
    assert queue.events() == []
