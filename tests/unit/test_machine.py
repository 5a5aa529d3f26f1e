"""The state machine: the design's table exactly, the additions, and nothing else."""

import itertools
import pathlib

import pytest

from inspector import statechart
from inspector.errors import InvalidTransition
from inspector.machine import (
    ACTIVE_STATES,
    DEJA_VU_REASON,
    STRICT_EVENTS,
    TABLE,
    Event,
    Machine,
    State,
    Task,
)

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
