"""The clean-up tasks (they only enqueue), their runner (runs recorded, fenced by the
leadership term), and the outage budget."""

import datetime
import math
import time

import pytest

from inspector import errors
from inspector.broker.message import DELETE, EXPIRE
from inspector.coordination.election import Fenced, Leadership
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from inspector.machine import State
from inspector.periodic import runner as runner_module
from inspector.periodic.runner import Runner
from inspector.periodic.tasks import CleanUp, PeriodicTask
from tests import seed
from tests.fakes.ironic import FakeIronic
from tests.integration.cluster import wait_for
from tests.unit.conftest import RecordingQueue

KIND = runner_module.KIND
NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


def ago(seconds: float) -> datetime.datetime:
    return NOW - datetime.timedelta(seconds=seconds)


@pytest.fixture
def clocked(store):
    store.clock = lambda: NOW
    return store


def leadership(store, holder="me") -> Leadership:
    term = store.claim_leadership(KIND, holder)
    return Leadership(KIND, holder, term, lease_seconds=60.0, acquired_at=time.monotonic())


def node(store, uuid, state, *, started=None, finished=None, updated=None):
    seed.node(store, uuid, state, started_at=started)
    if finished or updated:
        store.clock = lambda: updated or NOW
        seed.move(store, uuid, state, finished_at=finished)
        store.clock = lambda: NOW


@pytest.fixture
def cleanup(clocked, conf):
    conf.set_override("timeout", 600)
    conf.set_override("report_expiration", 3600, group="clean_up")
    return CleanUp(clocked, RecordingQueue(), FakeIronic(), conf)


def test_timeout_enqueues_only_old_running_introspections(cleanup, clocked):
    node(clocked, "old-waiting", State.WAITING, started=ago(601))
    node(clocked, "old-starting", State.STARTING, started=ago(900))
    node(clocked, "young-waiting", State.WAITING, started=ago(10))
    node(clocked, "old-finished", State.FINISHED, started=ago(5000), finished=ago(4000))
    node(clocked, "old-reapply", State.REAPPLYING, started=ago(9000), updated=ago(700))
    node(clocked, "new-reapply", State.REAPPLYING, started=ago(9000), updated=ago(5))
    assert cleanup.timeout(leadership(clocked)) == "3 timed out"
    assert sorted(cleanup.queue.events()) == [
        ("old-reapply", "timeout"),
        ("old-starting", "timeout"),
        ("old-waiting", "timeout"),
    ]


def test_expiry_enqueues_ended_introspections_past_the_report_expiration(cleanup, clocked):
    node(clocked, "old-finished", State.FINISHED, started=ago(9000), finished=ago(3601))
    node(clocked, "old-error", State.ERROR, started=ago(9000), finished=ago(7200))
    node(clocked, "recent", State.FINISHED, started=ago(9000), finished=ago(60))
    node(clocked, "running", State.WAITING, started=ago(9000))
    assert cleanup.expiry(leadership(clocked)).startswith("2 expired")
    assert sorted(cleanup.queue.events()) == [("old-error", EXPIRE), ("old-finished", EXPIRE)]


def test_expiry_prunes_each_history_to_history_keep(cleanup, clocked, conf):
    """history_keep = 2: a third introspection prunes the first, the failed one stays."""
    conf.set_override("history_keep", 2, group="processing")
    for index, state in enumerate((State.FINISHED, State.FINISHED, State.ERROR)):
        started = ago(900 - index * 100)
        if index == 0:
            node(clocked, "n1", State.STARTING, started=started)
        else:
            seed.move(clocked, "n1", State.STARTING, started_at=started, finished_at=None)
        clocked.keep_introspection(seed.move(clocked, "n1", state, finished_at=started))
    _first, second, failed = clocked.history_page("n1", limit=10)[::-1]
    assert cleanup.expiry(leadership(clocked)).endswith("1 past introspections forgotten")
    assert clocked.history_page("n1", limit=10) == [failed, second]
    assert cleanup.expiry(leadership(clocked)).endswith("0 past introspections forgotten")


def test_ironic_sync_deletes_what_ironic_no_longer_has(cleanup, clocked):
    kept = cleanup.ironic.add_node().uuid
    node(clocked, kept, State.WAITING, started=ago(1))
    node(clocked, "gone-from-ironic", State.FINISHED, started=ago(1), finished=ago(1))
    node(clocked, "being-enrolled", State.ENROLLING, started=ago(1))
    assert cleanup.ironic_sync(leadership(clocked)) == "1 removed"
    assert cleanup.queue.events() == [("gone-from-ironic", DELETE)]


def test_ironic_sync_pages_through_both_lists(cleanup, clocked, monkeypatch):
    monkeypatch.setattr("inspector.periodic.tasks.PAGE_SIZE", 2)
    in_ironic = [cleanup.ironic.add_node().uuid for _ in range(3)]
    for uuid in [*in_ironic, "x1", "x2", "x3"]:
        node(clocked, uuid, State.WAITING, started=ago(1))
    cleanup.ironic_sync(leadership(clocked))
    assert sorted(cleanup.queue.events()) == [(u, DELETE) for u in ("x1", "x2", "x3")]


def test_a_superseded_leader_enqueues_nothing(cleanup, clocked):
    node(clocked, "old-waiting", State.WAITING, started=ago(601))
    mine = leadership(clocked)
    mine.reset.set()
    with pytest.raises(Fenced):
        cleanup.timeout(mine)
    assert cleanup.queue.events() == []


def test_runner_records_runs_and_survives_a_failing_task(clocked):
    calls = []

    def failing(_leadership):
        calls.append("failing")
        raise RuntimeError("boom")

    def fine(lead):
        calls.append("fine")
        # End the leadership once each has run to its end at least once (a second call
        # starts only after the first returned): the two run in threads of their own,
        # and under load either may be late.
        if calls.count("fine") >= 2 and calls.count("failing") >= 2:
            lead.reset.set()
        return "ok"

    lifecycle = Lifecycle()
    runner = Runner(
        clocked,
        [PeriodicTask("failing", 0.001, failing), PeriodicTask("fine", 0.001, fine)],
        Outages(lifecycle, {}),
    )
    runner(leadership(clocked))
    runs = clocked.task_runs()
    assert {r.task for r in runs} == {"failing", "fine"}
    assert all(r.finished_at is not None for r in runs)
    assert any(r.outcome == "failed: boom" for r in runs)
    assert not lifecycle.shutdown.is_set()


def test_runner_is_fenced_by_a_newer_term(clocked):
    old = leadership(clocked, "old")
    leadership(clocked, "new")  # a new leader claimed a newer term
    runner = Runner(clocked, [PeriodicTask("t", 1.0, lambda _: "ran")], Outages(Lifecycle(), {}))
    with pytest.raises(Fenced, match="superseded"):
        runner(old)
    assert clocked.task_runs() == []


def test_a_run_that_outlived_its_leadership_ends_when_the_leadership_did(clocked):
    lead = leadership(clocked)

    def frozen(current):
        current._deadline = time.monotonic() - 30  # as if frozen 30 s past the lease
        return "done"

    clocked.clock = lambda: datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    Runner(clocked, [PeriodicTask("t", 1.0, frozen)], Outages(Lifecycle(), {}))(lead)
    (run,) = clocked.task_runs()
    assert run.finished_at < clocked.clock() - datetime.timedelta(seconds=29)
    assert "lapsed" in run.outcome


def test_outage_budget_gives_up_after_retries_times_interval():
    lifecycle = Lifecycle()
    now = [0.0]
    outages = Outages(lifecycle, {"database": RetryPolicy(3, 2.0)}, clock=lambda: now[0])
    outages.failed("database", "down")
    now[0] = 5.9
    outages.failed("database", "down")
    assert not lifecycle.shutdown.is_set()
    now[0] = 6.0
    outages.failed("database", "still down")
    assert lifecycle.shutdown.is_set()
    assert lifecycle.exit_status == 1
    assert lifecycle.reason.startswith("gave up on database: still down")


def test_outage_budget_restarts_after_a_recovery():
    lifecycle = Lifecycle()
    now = [0.0]
    outages = Outages(lifecycle, {"DLM": RetryPolicy(1, 1.0)}, clock=lambda: now[0])
    outages.failed("DLM", "down")
    now[0] = 0.9
    outages.recovered("DLM")
    now[0] = 1.5
    outages.failed("DLM", "down again")
    assert not lifecycle.shutdown.is_set()


def test_negative_retries_mean_forever():
    lifecycle = Lifecycle()
    now = [0.0]
    outages = Outages(lifecycle, {"database": RetryPolicy(-1, 1.0)}, clock=lambda: now[0])
    outages.failed("database", "down")
    now[0] = 1e9
    outages.failed("database", "down")
    assert not lifecycle.shutdown.is_set()


def test_service_unavailable_names_its_service():
    assert errors.ServiceUnavailable("x", service="queue").service == "queue"
    assert errors.ServiceUnavailable("x").service is None


def stop_during_the_run(store, lease_seconds: float, task) -> list:
    """Run `task` once under a leadership of `lease_seconds` that the process ends (as
    the election's reset does when it stops) while the run is under way; the runs."""
    term = store.claim_leadership(KIND, "me")
    lead = Leadership(KIND, "me", term, lease_seconds, acquired_at=time.monotonic())

    def run(current):
        try:
            current.end("stopping")
            return task(current)
        finally:
            current.reset.set()  # whatever happens, the leadership is over: one run

    store.clock = lambda: NOW
    runner = Runner(store, [PeriodicTask("t", 60.0, run)], Outages(Lifecycle(), {}))
    try:
        runner(lead)
    except Fenced:
        pass  # the run noticed the stop: the election logs it and moves on
    return store.task_runs()


@pytest.mark.parametrize("lease", [math.inf, 3.0], ids=["in-process DLM", "3 s lease"])
def test_a_run_the_process_stops_is_recorded_stopped_now(store, lease):
    def checks(current):
        current.check()
        return "never"

    (run,) = stop_during_the_run(store, lease, checks)
    assert run.finished_at == NOW
    assert run.outcome == "stopped: no longer the periodic leader (term 1): stopping"


@pytest.mark.parametrize("lease", [math.inf, 3.0], ids=["in-process DLM", "3 s lease"])
def test_a_run_that_ends_after_the_stop_keeps_its_outcome(store, lease):
    (run,) = stop_during_the_run(store, lease, lambda _current: "0 timed out")
    assert (run.finished_at, run.outcome) == (NOW, "0 timed out")


def test_a_run_stopped_then_slow_past_its_lease_did_not_lapse(store):
    def slow(current):
        wait_for(lambda: current.trusted_until() < time.time(), 5, 0.01, "its trust run out")
        return "0 removed"

    (run,) = stop_during_the_run(store, 1.0, slow)
    assert (run.finished_at, run.outcome) == (NOW, "0 removed")


def test_a_run_on_an_infinite_lease_ends_now(clocked):
    term = clocked.claim_leadership(KIND, "me")
    lead = Leadership(KIND, "me", term, math.inf, acquired_at=time.monotonic())

    def once(current):
        current.reset.set()
        return "ran"

    Runner(clocked, [PeriodicTask("t", 60.0, once)], Outages(Lifecycle(), {}))(lead)
    (run,) = clocked.task_runs()
    assert (run.finished_at, run.outcome) == (NOW, "ran")
