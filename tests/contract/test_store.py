"""The store's contract, one suite run on every database: SQLite, PostgreSQL, MariaDB.

What the API, the worker, the firewall and the periodic tasks rely on, whichever
statements a database runs (PostgreSQL's single statements, a transaction elsewhere): a
state change is a compare-and-swap on the node's version written with its request row,
or nothing is written; a request is read back with its node and marked along its
statuses; nodes are listed, found by MAC or BMC address and deleted with everything
hanging off them; rules, leadership terms, periodic runs and the outbox; and what the
machine's table declares of each state's entry (the columns a commit writes, its
notification, the column a timeout counts from), which the store does and no more.
"""

import dataclasses
import uuid
from datetime import datetime, timedelta

import pytest

from inspector import errors
from inspector.commit import commit
from inspector.effects import Clock, Value, Writes
from inspector.machine import ENTRIES, TABLE, Machine, RequestStatus, Row, State, effects_of
from inspector.store import Change, NodeRecord, Store, dialects, schema
from tests import seed

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
THIRD = "3be26c0b-03f2-4d2e-ae87-c02d7f33c125"
#: Microseconds included: every database keeps them.
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901)
RULE = {
    "uuid": "9c1e9a70-3b2d-4f6e-8a9b-0c1d2e3f4a5b",
    "description": "set the name",
    "scope": None,
    "conditions": [{"op": "eq", "field": "inventory.x", "value": 1}],
    "actions": [{"action": "set-attribute", "path": "/name", "value": "x"}],
}


class FakeClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _open(database_url: str, clock: FakeClock, **kwargs):
    schema.upgrade(database_url)
    db = Store.from_url(database_url, clock=clock, **kwargs)
    yield db
    db.close()


@pytest.fixture
def store(database_url, clock):
    """A Store on a new database of each kind in turn, its schema upgraded."""
    yield from _open(database_url, clock)


@pytest.fixture
def notifying(database_url, clock):
    """The same, writing an outbox notification with each start, finish and failure."""
    yield from _open(database_url, clock, notify=True)


def create(node_uuid=NODE, request_id="r1", target="starting", **fields) -> Change:
    return Change(node_uuid, None, request_id, "inspect", None, target, **fields)


def move(node, request_id, target, event="wait", **fields) -> Change:
    return Change(node.uuid, node.version, request_id, event, node.state, target, **fields)


def test_postgresql_runs_its_own_statements(store):
    # Otherwise the suite would run the portable statements twice.
    postgresql = store.engine.dialect.name == "postgresql"
    assert isinstance(store._dialect, dialects.Postgresql) is postgresql


# -- nodes: created by their first change, then compare-and-swap ---------------------


def test_a_change_creates_the_node_at_version_one_with_its_request(store):
    node = store.apply(create(started_at=T0, manage_boot=False))
    assert store.get_node(NODE) == node
    assert (node.state, node.version, node.started_at, node.finished_at) == (
        "starting",
        1,
        T0,
        None,
    )
    assert (node.error, node.manage_boot, node.updated_at) == (None, False, T0)
    loaded, seen = store.load(NODE, "r1")
    assert loaded == node
    assert (seen.node_uuid, seen.event, seen.source_state, seen.target_state) == (
        NODE,
        "inspect",
        None,
        "starting",
    )
    assert (seen.status, seen.version, seen.applied_at, seen.done_at) == ("applied", 1, T0, None)


def test_manage_boot_defaults_to_true(store):
    assert store.apply(create()).manage_boot is True
    assert store.get_node(NODE).manage_boot is True


def test_a_change_with_a_status_past_applied_is_done_when_written(store, clock):
    store.apply(create(status=RequestStatus.DONE))
    assert store.find_request("r1").done_at == clock.now


def test_creating_an_existing_node_writes_nothing(store):
    node = store.apply(create())
    with pytest.raises(errors.Conflict):
        store.apply(create(request_id="r2", target="waiting"))
    assert store.get_node(NODE) == node
    assert store.find_request("r2") is None


def test_a_request_id_seen_before_creates_no_node(store):
    store.apply(create())
    with pytest.raises(errors.Conflict):
        store.apply(create(OTHER))
    with pytest.raises(errors.NotFound):
        store.get_node(OTHER)


def test_a_missing_node_is_not_found(store):
    with pytest.raises(errors.NotFound, match=NODE):
        store.get_node(NODE)
    with pytest.raises(errors.NotFound):
        store.apply(Change(NODE, 1, "r1", "wait", "starting", "waiting"))
    assert store.find_request("r1") is None


def test_a_change_swaps_the_state_and_bumps_the_version(store, clock):
    node = store.apply(create(started_at=T0))
    clock.advance(10)
    moved = store.apply(move(node, "r2", "waiting"), node)
    assert store.get_node(NODE) == moved
    assert (moved.state, moved.version, moved.updated_at) == ("waiting", 2, clock.now)
    assert moved.started_at == T0  # not given: left as it was
    ended = store.apply(move(moved, "r3", "error", error="boom", finished_at=clock.now), moved)
    assert store.get_node(NODE) == ended
    assert (ended.state, ended.version, ended.error, ended.finished_at) == (
        "error",
        3,
        "boom",
        clock.now,
    )
    assert store.find_request("r3").reason == "boom"
    restarted = store.apply(move(ended, "r4", "starting", error=None, finished_at=None))
    assert (restarted.error, restarted.finished_at) == (None, None)  # None clears a column
    assert store.get_node(NODE) == restarted


def test_a_stale_version_is_refused_and_writes_nothing(store):
    node = store.apply(create())
    moved = store.apply(move(node, "r2", "waiting"), node)
    with pytest.raises(errors.NodeBusy) as raised:
        store.apply(move(node, "r3", "error", event="abort", error="timeout"), node)
    assert raised.value.retryable
    assert store.get_node(NODE) == moved
    assert store.find_request("r3") is None


def test_a_request_id_seen_before_changes_nothing(store):
    node = store.apply(create())
    moved = store.apply(move(node, "r2", "waiting"), node)
    with pytest.raises(errors.Conflict):
        store.apply(move(moved, "r2", "error", event="abort"), moved)
    assert store.get_node(NODE) == moved


def test_apply_reads_the_node_when_not_given_it(store):
    node = store.apply(create())
    assert store.apply(move(node, "r2", "waiting")).version == 2


# -- requests: read with their node, marked along their statuses --------------------


def test_load_reads_the_node_with_the_request(store):
    assert store.load(NODE, "r1") == (None, None)
    node = store.apply(create())
    assert store.load(NODE, "r2") == (node, None)
    assert store.load(OTHER, "r1")[0] is None  # another node's request: no node
    assert store.load(OTHER, "r1")[1].node_uuid == NODE


def test_reject_records_the_request_and_leaves_the_node(store, clock):
    node = store.apply(create())
    store.reject(NODE, "r2", "continue", "starting", "not now")
    loaded, seen = store.load(NODE, "r2")
    assert loaded == node
    assert (seen.status, seen.reason, seen.version) == ("rejected", "not now", None)
    assert (seen.source_state, seen.target_state, seen.done_at) == ("starting", "starting", T0)
    with pytest.raises(errors.Conflict):
        store.reject(NODE, "r2", "continue", "starting", "again")


def test_finish_request_marks_an_unfinished_request_done(store, clock):
    node = store.apply(create())
    store.apply(move(node, "r2", "waiting"), node)
    store.mark_ran("r2")
    clock.advance(5)
    for request_id in ("r1", "r2"):
        store.finish_request(request_id)
        done = store.find_request(request_id)
        assert (done.status, done.done_at) == ("done", clock.now)
    clock.advance(5)
    store.finish_request("r1")  # done already: left as it was
    assert store.find_request("r1").done_at == clock.now - timedelta(seconds=5)


def test_an_interrupted_request_may_run_then_finish(store):
    store.apply(create())
    store.interrupt_request("r1")
    assert store.find_request("r1").status == RequestStatus.INTERRUPTED
    store.mark_ran("r1")
    assert store.find_request("r1").status == RequestStatus.RAN
    store.interrupt_request("r1")  # only an applied request is interrupted
    assert store.find_request("r1").status == RequestStatus.RAN
    store.finish_request("r1")
    assert store.find_request("r1").status == RequestStatus.DONE
    store.mark_ran("r1")  # done stays done
    assert store.find_request("r1").status == RequestStatus.DONE


def test_a_rejected_request_stays_rejected(store):
    store.apply(create())
    store.reject(NODE, "r2", "continue", "starting", "not now")
    store.finish_request("r2")
    store.mark_ran("r2")
    store.interrupt_request("r2")
    assert store.find_request("r2").status == RequestStatus.REJECTED


def test_history_is_in_the_order_applied(store, clock):
    node = store.apply(create())
    clock.advance(1)
    node = store.apply(move(node, "r2", "waiting"), node)
    clock.advance(1)
    store.reject(NODE, "r3", "inspect", "waiting", "busy")
    assert [r.request_id for r in store.history(NODE)] == ["r1", "r2", "r3"]
    assert store.history(OTHER) == []


def test_delete_removes_the_node_and_everything_hanging_off_it(store):
    store.apply(create())
    seed.node(store, OTHER, "waiting")
    for node_uuid in (NODE, OTHER):
        store.set_attributes(node_uuid, {"mac": [f"aa:bb:cc:dd:ee:{node_uuid[0]}0"]})
        store.store_data(node_uuid, {"a": 1}, processed=True)
        store.save_snapshot(node_uuid, {"uuid": node_uuid}, None)
    assert store.delete_node(NODE) is True
    assert store.load(NODE, "r1") == (None, None)
    assert store.history(NODE) == []
    assert store.attributes(NODE) == {}
    assert store.get_data(NODE, processed=True) is None
    assert store.snapshot(NODE) is None
    assert store.delete_node(NODE) is False
    assert store.get_node(OTHER).state == "waiting"  # the other node keeps its own
    assert store.attributes(OTHER) == {"mac": ["aa:bb:cc:dd:ee:20"]}
    assert store.get_data(OTHER, processed=True) == {"a": 1}


# -- listing, lookup by MAC and BMC address, data and snapshots ------------------------


def test_list_pages_newest_first_by_marker_and_state(store):
    seed.node(store, NODE, "finished", started_at=T0)
    seed.node(store, OTHER, "waiting", started_at=T0 + timedelta(seconds=1))
    seed.node(store, THIRD, "finished", started_at=T0)  # same time: by uuid, descending
    assert [n.uuid for n in store.list_nodes(limit=10)] == [OTHER, THIRD, NODE]
    assert [n.uuid for n in store.list_nodes(limit=2)] == [OTHER, THIRD]
    assert [n.uuid for n in store.list_nodes(limit=2, marker=THIRD)] == [NODE]
    assert [n.uuid for n in store.list_nodes(limit=10, states=["finished"])] == [THIRD, NODE]
    assert store.list_nodes(limit=10)[0] == store.get_node(OTHER)
    with pytest.raises(errors.BadRequest):
        store.list_nodes(limit=10, marker="no-such-node")


def test_lookup_finds_nodes_by_mac_and_bmc_address(store):
    seed.node(store, NODE, "waiting")
    seed.node(store, OTHER, "finished")
    store.set_attributes(NODE, {"mac": ["AA:BB:CC:DD:EE:01"], "bmc_address": ["10.0.0.1"]})
    store.set_attributes(OTHER, {"mac": ["aa:bb:cc:dd:ee:02"]})
    assert store.attributes(NODE) == {"bmc_address": ["10.0.0.1"], "mac": ["aa:bb:cc:dd:ee:01"]}
    wanted = {"mac": ["aa:bb:cc:dd:ee:01", "AA:BB:CC:DD:EE:02"], "bmc_address": ["10.0.0.1"]}
    found = store.lookup_nodes(wanted)
    assert found == {NODE: (2, store.get_node(NODE)), OTHER: (1, store.get_node(OTHER))}
    assert store.lookup_nodes({"mac": ["aa:bb:cc:dd:ee:03"]}) == {}
    assert store.lookup_nodes({"mac": [], "bmc_address": [""]}) == {}


def test_set_attributes_replaces_them(store):
    seed.node(store, NODE, "waiting")
    store.set_attributes(NODE, {"mac": ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"]})
    store.set_attributes(NODE, {"mac": ["aa:bb:cc:dd:ee:02"], "bmc_address": ["10.0.0.1"]})
    assert store.attributes(NODE) == {"bmc_address": ["10.0.0.1"], "mac": ["aa:bb:cc:dd:ee:02"]}
    assert store.lookup_nodes({"mac": ["aa:bb:cc:dd:ee:01"]}) == {}
    store.set_attributes(NODE, {})
    assert store.attributes(NODE) == {}


def test_an_attribute_of_two_nodes_finds_both(store):
    # The lookup decides between them (processing.lookup): the store keeps both.
    seed.node(store, NODE, "waiting")
    seed.node(store, OTHER, "finished")
    store.set_attributes(NODE, {"mac": ["aa:bb:cc:dd:ee:01"]})
    store.set_attributes(OTHER, {"mac": ["aa:bb:cc:dd:ee:01"]})
    found = store.lookup_nodes({"mac": ["aa:bb:cc:dd:ee:01"]})
    assert {uuid: count for uuid, (count, _) in found.items()} == {NODE: 1, OTHER: 1}


def test_data_is_inserted_then_replaced(store):
    seed.node(store, NODE, "waiting")
    assert store.get_data(NODE, processed=False) is None
    store.store_data(NODE, {"a": 1}, processed=False)
    store.store_data(NODE, {"b": 2}, processed=True)
    store.store_data(NODE, {"a": 3, "text": "naïve ✓ 🚀"}, processed=False)
    assert store.get_data(NODE, processed=False) == {"a": 3, "text": "naïve ✓ 🚀"}
    assert store.get_data(NODE, processed=True) == {"b": 2}


def test_snapshot_is_inserted_then_replaced(store, clock):
    seed.node(store, NODE, "starting")
    assert store.snapshot(NODE) is None
    store.save_snapshot(NODE, {"uuid": NODE, "name": "a"}, None)
    first = store.snapshot(NODE)
    assert (first.node, first.ports, first.taken_at) == ({"uuid": NODE, "name": "a"}, None, T0)
    clock.advance(1)
    store.save_snapshot(NODE, {"uuid": NODE, "name": "b"}, [{"address": "aa:bb:cc:dd:ee:01"}])
    second = store.snapshot(NODE)
    assert (second.node["name"], second.taken_at) == ("b", clock.now)
    assert second.ports == [{"address": "aa:bb:cc:dd:ee:01"}]


# -- rules ----------------------------------------------------------------------------


def test_rules_are_created_read_listed_and_deleted(store, clock):
    created = store.create_rule(RULE)
    assert created == {
        **RULE,
        "conditions": [{**RULE["conditions"][0], "multiple": "any", "invert": False}],
    }
    assert store.get_rule(RULE["uuid"]) == created
    with pytest.raises(errors.Conflict):
        store.create_rule(RULE)
    clock.advance(1)
    second = store.create_rule({"uuid": OTHER, "actions": [{"action": "fail", "message": "x"}]})
    assert second["conditions"] == [] and second["description"] is None
    assert [r["uuid"] for r in store.rule_summaries()] == [RULE["uuid"], OTHER]
    assert store.all_rules() == [created, second]  # in creation order, for evaluation
    store.delete_rule(RULE["uuid"])
    with pytest.raises(errors.NotFound):
        store.get_rule(RULE["uuid"])
    with pytest.raises(errors.NotFound):
        store.delete_rule(RULE["uuid"])
    store.delete_rules()
    assert store.rule_summaries() == [] and store.all_rules() == []


# -- singletons: leadership terms, periodic runs, markers, the clean-up's nodes -------


def test_each_claim_is_a_new_term_that_fences_the_last(store, clock):
    assert store.leadership("periodic") is None
    first = store.claim_leadership("periodic", "host-1")
    clock.advance(1)
    second = store.claim_leadership("periodic", "host-2")
    assert second == first + 1
    leader = store.leadership("periodic")
    assert (leader.holder, leader.term, leader.at) == ("host-2", second, clock.now)
    assert store.start_run("periodic", "sync", "host-1", first) is None  # fenced off
    run_id = store.start_run("periodic", "sync", "host-2", second)
    assert run_id is not None
    clock.advance(5)
    store.finish_run(run_id, "3 synced")
    (run,) = store.task_runs("sync")
    assert (run.id, run.holder, run.term, run.outcome) == (run_id, "host-2", second, "3 synced")
    assert (run.started_at, run.finished_at) == (clock.now - timedelta(seconds=5), clock.now)
    assert store.task_runs("other") == []
    assert store.forget_runs(clock.now - timedelta(seconds=5)) == 0
    assert store.forget_runs(clock.now) == 1
    assert store.task_runs() == []


def test_a_run_never_finishes_later_than_now(store, clock):
    term = store.claim_leadership("periodic", "host-1")
    run_id = store.start_run("periodic", "sync", "host-1", term)
    store.finish_run(run_id, "done", at=clock.now + timedelta(hours=1))
    assert store.task_runs()[0].finished_at == clock.now


def test_markers_and_the_reboot_throttle(store, clock):
    assert store.mark("cluster-fact") is None and store.last_power_on() is None
    store.stamp("cluster-fact", "host-1")
    store.stamp("cluster-fact", "host-2")
    mark = store.mark("cluster-fact")
    assert (mark.holder, mark.term, mark.at) == ("host-2", 2, clock.now)
    store.mark_power_on("host-3")
    assert store.last_power_on().holder == "host-3"


def test_the_clean_up_finds_timed_out_expired_and_paged_nodes(store, clock):
    seed.node(store, NODE, "waiting", started_at=T0)
    seed.node(store, OTHER, "finished", started_at=T0)
    seed.move(store, OTHER, "finished", finished_at=T0)
    seed.node(store, THIRD, "reapplying")  # timed from its entry (updated_at)
    later = T0 + timedelta(seconds=1)
    assert store.timed_out_nodes(later) == [NODE, THIRD]
    assert store.timed_out_nodes(T0) == []
    assert store.expired_nodes(later) == [OTHER]
    assert store.expired_nodes(T0) == []
    assert store.node_uuids(limit=2) == [NODE, OTHER]
    assert store.node_uuids(limit=2, after=OTHER) == [THIRD]
    assert store.node_uuids(limit=5, skip_states=["finished"]) == [NODE, THIRD]


def test_the_census_counts_nodes_leaders_runs_and_notifications(store):
    seed.node(store, NODE, "waiting")
    seed.node(store, OTHER, "waiting")
    seed.node(store, THIRD, "finished")
    term = store.claim_leadership("periodic", "host-1")
    store.finish_run(store.start_run("periodic", "sync", "host-1", term), "ok")
    census = store.census()
    assert census.nodes_by_state == {"waiting": 2, "finished": 1}
    assert census.leaders == {"periodic": ("host-1", term, T0)}
    assert census.last_runs == {"sync": (T0, T0, "ok")}
    assert census.notifications_pending == 0


# -- the outbox ---------------------------------------------------------------------


def test_a_start_and_its_end_are_written_to_the_outbox(notifying, clock):
    store = notifying
    node = store.apply(create(started_at=T0))
    node = store.apply(move(node, "r2", "waiting"), node)  # no notification
    clock.advance(10)
    store.apply(move(node, "r3", "finished", event="finish", finished_at=clock.now), node)
    due = store.due_notifications()
    assert [n.event_type for n in due] == [
        "inspector.introspection.start",
        "inspector.introspection.finish",
    ]
    assert [n.payload["request_id"] for n in due] == ["r1", "r3"]
    assert due[1].payload["duration_seconds"] == 10.0
    assert store.pending_notifications() == 2
    store.postpone_notification(due[0].id, 30, "receiver down")
    assert [n.id for n in store.due_notifications()] == [due[1].id]
    store.notification_delivered(due[1].id)
    assert store.pending_notifications() == 1
    clock.advance(30)
    (again,) = store.due_notifications()
    assert (again.id, again.attempts) == (due[0].id, 1)
    assert store.forget_notifications(clock.now + timedelta(seconds=1)) == 1


def test_a_refused_change_writes_no_notification(notifying):
    store = notifying
    node = store.apply(create())
    store.apply(move(node, "r2", "waiting"), node)
    with pytest.raises(errors.NodeBusy):
        store.apply(move(node, "r3", "error", event="abort"), node)
    assert [n.event_type for n in store.due_notifications()] == ["inspector.introspection.start"]


def test_records_are_frozen(store):
    node = store.apply(create())
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.state = "waiting"  # type: ignore[misc]


# -- what the machine's table declares ---------------------------------------------

#: The node columns an entry may write (the fields of Writes).
COLUMNS = tuple(field.name for field in dataclasses.fields(Writes))
#: The last run's times and error, on a node before its transition.
OLD = datetime(2026, 1, 1, 0, 0, 0, 123456)
LAST_ERROR = "the last run's error"
#: The error message a committer gives when the transition has none of its own.
WHAT_WENT_WRONG = "start failed: Ironic refused the boot device"


def _arranged(store: Store, node_uuid: str, state: State | None) -> NodeRecord | None:
    """A node in `state` with its last run's times and error (None: no introspection)."""
    if state is None:
        return None
    seed.node(store, node_uuid, state, started_at=OLD)
    return seed.move(store, node_uuid, state, finished_at=OLD, error=LAST_ERROR)


def _expected(row: Row, before: NodeRecord | None, now: datetime) -> dict:
    """The columns after `row`'s commit, as the table says: written, else kept."""
    values = {Value.NOW: now, Value.CLEARED: None, Value.REASON: row.reason or WHAT_WENT_WRONG}
    written = effects_of(row.source, row.target).writes.columns()
    return {
        column: values[written[column]]
        if column in written
        else (None if before is None else getattr(before, column))
        for column in COLUMNS
    }


def test_each_transition_writes_and_sends_what_its_targets_entry_declares(notifying, clock):
    store, machine = notifying, Machine()
    for number, row in enumerate(TABLE):
        node_uuid, request_id = str(uuid.UUID(int=number + 1)), f"r{number}"
        before = _arranged(store, node_uuid, row.source)
        clock.advance(1)
        committed = commit(
            store,
            node_uuid,
            before,
            machine.advance(row.source, row.event),
            request_id,
            status=RequestStatus.APPLIED,
            reason=None if row.reason else WHAT_WENT_WRONG,
        )
        read = store.get_node(node_uuid)
        assert read == committed, row
        assert {column: getattr(read, column) for column in COLUMNS} == _expected(
            row, before, clock.now
        ), row
        sent = [
            note.event_type
            for note in store.due_notifications(limit=1000)
            if note.payload.get("request_id") == request_id
        ]
        notifies = effects_of(row.source, row.target).notifies
        assert sent == ([] if notifies is None else [notifies]), row


def test_each_state_times_out_from_the_column_its_entry_names(store, clock):
    # Per state, one node whose introspection starts late but entered its state early,
    # and one whose introspection started early but entered its state late.
    entered_early = {state: str(uuid.UUID(int=number + 1)) for number, state in enumerate(State)}
    started_early = {state: str(uuid.UUID(int=number + 101)) for number, state in enumerate(State)}
    for state, node_uuid in entered_early.items():
        seed.node(store, node_uuid, state, started_at=T0 + timedelta(hours=1))
    clock.advance(2 * 3600)
    for state, node_uuid in started_early.items():
        seed.node(store, node_uuid, state, started_at=T0)
    timed_out = store.timed_out_nodes(T0 + timedelta(minutes=1))
    expected = [entered_early[s] for s in State if ENTRIES[s].times_out is Clock.ENTERED]
    expected += [started_early[s] for s in State if ENTRIES[s].times_out is Clock.STARTED]
    assert timed_out == sorted(expected)
    assert store.timed_out_nodes(T0) == []
