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
#: reapply through reapplying, enrolling for discovery.
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
