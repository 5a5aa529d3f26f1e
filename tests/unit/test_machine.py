"""The state machine: the design's table exactly, the additions, and nothing else."""

import dataclasses
import itertools
import pathlib

import pytest

from inspector import statechart
from inspector.effects import Clock, Run, Value, Writes
from inspector.errors import InvalidTransition
from inspector.machine import (
    ACTIVE_STATES,
    DEJA_VU_REASON,
    ENTRIES,
    FINAL_STATES,
    STRICT_EVENTS,
    TABLE,
    TIMED,
    Entry,
    Event,
    Machine,
    State,
    Task,
    effects_of,
)
from inspector.store import Change, NodeRecord

S, E = State, Event

#: The original HA design's table, copied by hand from ARCHITECTURE.md.
DESIGN = [
    (None, E.INSPECT, S.STARTING),
    (S.STARTING, E.INSPECT, S.STARTING),
    (S.STARTING, E.WAIT, S.WAITING),
    (S.WAITING, E.WAIT, S.WAITING),
    (S.WAITING, E.TIMEOUT, S.ERROR),
    (S.WAITING, E.ABORT, S.ERROR),
    (S.WAITING, E.CONTINUE, S.PROCESSING),
    (S.PROCESSING, E.CONTINUE, S.ERROR),
    (S.PROCESSING, E.FINISH, S.FINISHED),
    (S.FINISHED, E.INSPECT, S.STARTING),
    (S.FINISHED, E.ABORT, S.ERROR),
    (S.ERROR, E.INSPECT, S.STARTING),
]

#: What ARCHITECTURE.md asks on top: timeouts and errors from every active state,
#: reapply through reapplying, enrolling for discovery; and a failed final power-off
#: recorded on a finished introspection.
ADDITIONS = [
    (S.STARTING, E.TIMEOUT, S.ERROR),
    (S.PROCESSING, E.TIMEOUT, S.ERROR),
    (S.REAPPLYING, E.TIMEOUT, S.ERROR),
    (S.ENROLLING, E.TIMEOUT, S.ERROR),
    (S.STARTING, E.ERROR, S.ERROR),
    (S.WAITING, E.ERROR, S.ERROR),
    (S.PROCESSING, E.ERROR, S.ERROR),
    (S.REAPPLYING, E.ERROR, S.ERROR),
    (S.ENROLLING, E.ERROR, S.ERROR),
    (S.FINISHED, E.REAPPLY, S.REAPPLYING),
    (S.ERROR, E.REAPPLY, S.REAPPLYING),
    (S.REAPPLYING, E.FINISH, S.FINISHED),
    (None, E.ENROLL, S.ENROLLING),
    (S.ENROLLING, E.CONTINUE, S.PROCESSING),
    (S.FINISHED, E.POWER_OFF_FAILED, S.FINISHED),
]

ALLOWED = {(s, e): t for s, e, t in DESIGN + ADDITIONS}


@pytest.fixture(scope="module")
def machine():
    return Machine()


@pytest.mark.parametrize(("source", "event", "target"), DESIGN + ADDITIONS)
def test_allowed_rows(machine, source, event, target):
    transition = machine.advance(source, event)
    assert transition.target is target
    assert machine.can(source, event)


def test_design_rows_come_first_exactly():
    head = [(r.source, r.event, r.target) for r in TABLE[: len(DESIGN)]]
    assert head == DESIGN
    assert all(r.origin == "design" for r in TABLE[: len(DESIGN)])
    assert all(r.origin == "addition" for r in TABLE[len(DESIGN) :])


@pytest.mark.parametrize(
    ("source", "event"),
    [(s, e) for s, e in itertools.product([None, *State], Event) if (s, e) not in ALLOWED],
)
def test_every_other_pair_is_rejected(machine, source, event):
    assert not machine.can(source, event)
    with pytest.raises(InvalidTransition, match=str(event)):
        machine.advance(source, event)


@pytest.mark.parametrize("state", sorted(ACTIVE_STATES))
def test_active_states_have_error_and_timeout_exits(machine, state):
    assert machine.advance(state, E.ERROR).target is S.ERROR
    assert machine.advance(state, E.TIMEOUT).target is S.ERROR


def test_only_continue_is_strict():
    assert STRICT_EVENTS == {E.CONTINUE}


def test_deja_vu_carries_its_reason(machine):
    transition = machine.advance(S.PROCESSING, E.CONTINUE)
    assert transition.target is S.ERROR
    assert transition.reason == DEJA_VU_REASON
    assert transition.is_strict


def test_abort_and_timeout_reasons(machine):
    assert machine.advance(S.WAITING, E.ABORT).reason == "Canceled by operator"
    assert "timeout" in machine.advance(S.WAITING, E.TIMEOUT).reason.lower()
    assert machine.advance(S.WAITING, E.ERROR).reason is None


def test_plain_strings_are_accepted(machine):
    assert machine.advance("waiting", "continue").target is S.PROCESSING


def test_duplicate_rows_are_refused():
    with pytest.raises(ValueError, match="two rows"):
        Machine(TABLE + TABLE[:1])


def test_states_doc_is_current():
    doc = pathlib.Path(__file__).parents[2] / "docs" / "states.md"
    assert doc.read_text() == statechart.render(), (
        "docs/states.md is stale: run `python -m inspector.statechart > docs/states.md`"
    )


def test_states_doc_lists_every_row():
    text = statechart.render()
    for row in TABLE:
        source = "[*]" if row.source is None else row.source.value
        assert f"{source} --> {row.target.value}" in text


def test_every_way_into_a_state_runs_its_task_and_follow_up():
    """The task and follow-up columns come from the target: every row into a state
    does the same work, and only the rows that start work have a follow-up."""
    by_target = {}
    for row in TABLE:
        by_target.setdefault(row.target, set()).add((row.task, row.follow_up))
    assert all(len(pairs) == 1 for pairs in by_target.values()), by_target
    assert by_target[State.STARTING] == {(Task.START, Event.WAIT)}
    assert by_target[State.WAITING] == {(None, None)}
    assert by_target[State.PROCESSING] == {(Task.PROCESS, Event.FINISH)}
    assert by_target[State.REAPPLYING] == {(Task.REAPPLY, Event.FINISH)}
    assert by_target[State.ENROLLING] == {(Task.ENROLL, Event.CONTINUE)}
    assert by_target[State.FINISHED] == by_target[State.ERROR] == {(Task.END, None)}


def test_a_transition_carries_its_rows_columns():
    transition = Machine().advance(State.WAITING, Event.CONTINUE)
    assert (transition.task, transition.follow_up) == (Task.PROCESS, Event.FINISH)
    assert transition.is_strict


def test_resume_rebuilds_a_committed_transition():
    machine = Machine()
    assert machine.resume(None, Event.INSPECT, State.STARTING) == machine.advance(
        None, Event.INSPECT
    )
    # A request row from a table without that row: the target's own columns.
    old = machine.resume(State.WAITING, Event.REAPPLY, State.REAPPLYING)
    assert (old.task, old.follow_up, old.reason) == (Task.REAPPLY, Event.FINISH, None)


def test_only_the_end_is_a_quick_task():
    assert [task for task in Task if task.is_quick] == [Task.END]


def test_every_follow_up_is_an_automatic_event_the_table_accepts():
    machine = Machine()
    for row in TABLE:
        if row.follow_up is not None:
            assert machine.can(row.target, row.follow_up), row


# -- what entering each state does --------------------------------------------------

NOW, CLEARED, REASON = Value
START, FINISH, FAIL = (f"inspector.introspection.{end}" for end in ("start", "finish", "error"))

#: What a commit into each state writes and sends, copied by hand: (from another state,
#: from itself). A change to the table's entries must change this too.
WRITTEN = {
    S.STARTING: (
        ({"started_at": NOW, "finished_at": CLEARED, "error": CLEARED}, START),
        ({}, None),
    ),
    S.WAITING: (({}, None), ({}, None)),
    S.PROCESSING: (({}, None), ({}, None)),
    S.REAPPLYING: (
        ({"finished_at": CLEARED, "error": CLEARED}, None),
        ({"finished_at": CLEARED, "error": CLEARED}, None),
    ),
    S.ENROLLING: (
        ({"started_at": NOW, "finished_at": CLEARED, "error": CLEARED}, None),
        ({}, None),
    ),
    S.FINISHED: (({"finished_at": NOW, "error": CLEARED}, FINISH), ({"error": REASON}, FINISH)),
    S.ERROR: (({"finished_at": NOW, "error": REASON}, FAIL), ({"error": REASON}, FAIL)),
}


def test_every_state_declares_its_entry():
    assert set(ENTRIES) == set(State)
    assert all(isinstance(entry, Entry) for entry in ENTRIES.values())
    assert set(WRITTEN) == set(State)


@pytest.mark.parametrize("state", list(State))
def test_what_entering_each_state_writes_and_sends(state):
    entry = ENTRIES[state]
    declared = [(e.writes.columns(), e.notifies) for e in (entry.entered, entry.again)]
    assert tuple(declared) == WRITTEN[state]
    other = S.WAITING if state is not S.WAITING else S.STARTING
    assert effects_of(None, state) == effects_of(other, state) == entry.entered
    assert effects_of(state, state) == effects_of(state.value, state.value) == entry.again


def test_the_written_columns_are_the_nodes_and_take_their_kind_of_value():
    node_columns = {field.name for field in dataclasses.fields(NodeRecord)}
    change_columns = {field.name for field in dataclasses.fields(Change)}
    assert set(Writes.__dataclass_fields__) <= node_columns & change_columns
    for entry in ENTRIES.values():
        for effects in (entry.entered, entry.again):
            writes = effects.writes
            assert {writes.started_at, writes.finished_at} <= {None, NOW, CLEARED}
            assert writes.error in (None, CLEARED, REASON)


def test_a_run_starts_reopens_and_ends_where_the_states_say():
    runs = {state: entry.entered.run for state, entry in ENTRIES.items()}
    assert {s for s, run in runs.items() if run is Run.STARTS} == {S.STARTING, S.ENROLLING}
    assert {s for s, run in runs.items() if run is Run.REOPENS} == {S.REAPPLYING}
    assert {s for s, run in runs.items() if run is Run.ENDS} == FINAL_STATES
    assert all(entry.again.run is not Run.ENDS for entry in ENTRIES.values())


def test_the_active_states_time_out_from_their_clock_and_the_final_ones_never():
    assert TIMED == {
        Clock.STARTED: {S.STARTING, S.WAITING, S.PROCESSING, S.ENROLLING},
        Clock.ENTERED: {S.REAPPLYING},
    }
    assert set().union(*TIMED.values()) == ACTIVE_STATES
    assert all(ENTRIES[state].times_out is None for state in FINAL_STATES)


def test_an_early_event_is_refused_until_the_follow_up_lands(machine):
    early = {(s, e) for s, entry in ENTRIES.items() for e in entry.early}
    assert early == {(S.STARTING, E.CONTINUE)}
    for state, event in early:
        assert not machine.can(state, event)
        follow_up = machine.advance(state, ENTRIES[state].follow_up)
        assert machine.can(follow_up.target, event)


def test_states_doc_shows_each_states_entry():
    entries = statechart.render_entries(ENTRIES)
    assert entries in statechart.render()
    lines = entries.splitlines()
    assert len(lines) == 2 + len(State)
    for state, entry in ENTRIES.items():
        (line,) = [line for line in lines if line.startswith(f"| {state.value} | ")]
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[3] == entry.entered.run.value
        assert cells[4] == (
            ", ".join(f"{c}: {v}" for c, v in entry.entered.writes.columns().items()) or "-"
        )
        assert cells[5] == (f"`{entry.entered.notifies}`" if entry.entered.notifies else "-")
        assert cells[7] == (entry.times_out.value if entry.times_out else "-")
