"""The introspection state machine: the one transition table, and the only importer of automaton.

Nothing else in the project decides whether an event may move a node, where to, which
task runs on the way, and which event follows automatically: each is a column of TABLE.
What entering a state does (its task and follow-up, the node columns a commit writes,
the notification, the timeout's clock) is its entry in ENTRIES, whichever row enters it.
The words the rest of the project uses about transitions (request statuses, the events
that open an introspection, the states that expect ramdisk data) are defined here too.
It does no I/O: callers load the state, ask `Machine.advance`, and commit the result.
"""

import dataclasses
import enum
from typing import cast

from automaton import exceptions as automaton_errors
from automaton import machines

from inspector.effects import NOTHING, Clock, Effects, Value, Writes
from inspector.errors import InvalidTransition


class State(enum.StrEnum):
    STARTING = "starting"
    WAITING = "waiting"
    PROCESSING = "processing"
    FINISHED = "finished"
    ERROR = "error"
    REAPPLYING = "reapplying"
    ENROLLING = "enrolling"


class Event(enum.StrEnum):
    INSPECT = "inspect"  # API: start (or restart) an introspection
    WAIT = "wait"  # automatic S~: the node was told to boot the ramdisk
    CONTINUE = "continue"  # the ramdisk posted its data (strict)
    FINISH = "finish"  # automatic F~: processing is done
    ABORT = "abort"  # API: the operator cancels
    TIMEOUT = "timeout"  # periodic task: the introspection took too long
    ERROR = "error"  # a task failed, or the ramdisk reported an error
    REAPPLY = "reapply"  # API: process the stored data again
    ENROLL = "enroll"  # discovery: an unknown node posted its data
    POWER_OFF_FAILED = "power-off-failed"  # a worker: the final power-off failed (recorded)


class Task(enum.StrEnum):
    """The work a worker does after committing a transition (inspector.worker.tasks)."""

    START = "start"  # record how to find the node, set PXE boot, power it on
    PROCESS = "process"  # hooks, rules, one update of Ironic, power off
    REAPPLY = "reapply"  # hooks and rules again on the stored data
    ENROLL = "enroll"  # discovery: create the node in Ironic
    END = "end"  # tell the PXE firewalls the introspection ended (when they listen)

    @property
    def is_quick(self) -> bool:
        """No work of its own beyond an announcement: a follow-up event whose transition
        runs it is applied at once, under the lock the parent's step holds."""
        return self is Task.END


class RequestStatus(enum.StrEnum):
    """Where a transition request is: each request's row in the store says it."""

    APPLIED = "applied"  # committed; its task not finished (or its worker died)
    #: Applied, and its task stopped by a backend outage the worker saw.
    INTERRUPTED = "interrupted"
    #: A strict event's task finished; its follow-up may not be applied yet. Seen again
    #: on the node as its transition left it, only its follow-up is applied: its work is
    #: not done twice.
    RAN = "ran"
    DONE = "done"  # its task ran and its follow-up is applied or enqueued
    REJECTED = "rejected"  # the machine refused the event


#: Statuses of a request not done yet (its task unfinished, or its follow-up unsent).
UNFINISHED = frozenset({RequestStatus.APPLIED, RequestStatus.INTERRUPTED, RequestStatus.RAN})

#: Events that must not take effect twice: a second request of one for a node already
#: past it sends the node to error ("deja vu"); the same request delivered again does
#: not redo a task that finished (see RequestStatus.RAN).
STRICT_EVENTS = frozenset({Event.CONTINUE})

#: Events that open an introspection (or reopen an ended one). The work queue gives them
#: a lane of their own, so that a batch of hundreds never queues ahead of the requests
#: that move the introspections already under way.
START_EVENTS = frozenset({Event.INSPECT, Event.REAPPLY, Event.ENROLL})

#: States in which work is in flight; each has an `error` and a `timeout` exit.
ACTIVE_STATES = frozenset(
    {State.STARTING, State.WAITING, State.PROCESSING, State.REAPPLYING, State.ENROLLING}
)

#: States in which an introspection is over (`finished: true` in the API).
FINAL_STATES = frozenset({State.FINISHED, State.ERROR})

#: States in which a node waits for its ramdisk's data (starting: the ramdisk was faster
#: than the automatic `wait`; the worker applies `continue` once `wait` has landed).
EXPECTING_DATA = frozenset({State.WAITING, State.STARTING})

#: Error messages set by transitions into `error` that carry no message of their own.
ABORT_REASON = "Canceled by operator"
TIMEOUT_REASON = "Introspection timeout"
DEJA_VU_REASON = (
    "Deja vu: ramdisk data for this node came again (a second continue request) "
    "before the processing of its earlier data finished; not processing it twice, "
    "restart the introspection"
)

_NONE = "(none)"  # automaton needs a name for "no introspection yet"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Entry:
    """What entering a state does, whichever row enters it (a field left out: nothing)."""

    task: Task | None = None  # the work a worker does once the transition is committed
    follow_up: Event | None = None  # the event applied next when the task succeeded
    entered: Effects = NOTHING  # a commit from another state (or no introspection)
    again: Effects = NOTHING  # a commit from the state itself (an event repeated)
    times_out: Clock | None = None  # the column its timeout counts from
    early: frozenset[Event] = frozenset()  # refused here, retried until follow_up lands


class _Entering:
    """A way into `target`: its task and follow-up are the target's entry's (ENTRIES), so
    that every way into a state does the same work."""

    target: State

    @property
    def task(self) -> Task | None:
        return ENTRIES[self.target].task

    @property
    def follow_up(self) -> Event | None:
        return ENTRIES[self.target].follow_up


@dataclasses.dataclass(frozen=True)
class Row(_Entering):
    """One transition: `source` None means the node has no introspection record yet."""

    source: State | None
    event: Event
    target: State
    origin: str  # "design", or "addition" for what ironic-inspector added / our fixes
    note: str = ""
    reason: str | None = None  # the node's error message when target is ERROR


def _error_rows(
    states: tuple[State, ...], event: Event, reason: str | None, note: str
) -> tuple[Row, ...]:
    return tuple(Row(s, event, State.ERROR, "addition", note, reason) for s in states)


S, E = State, Event
NOW, CLEARED, REASON = Value

#: A commit that starts a new run, reopens an ended one, or notes what went wrong after
#: the end (its final power-off failed: the end kept, the error said).
_NEW_RUN = Writes(started_at=NOW, finished_at=CLEARED, error=CLEARED)
_REOPENED = Effects(Writes(finished_at=CLEARED, error=CLEARED))
_NOTE = Writes(error=REASON)
#: The notifications' event types.
START, FINISH, FAIL = (f"inspector.introspection.{end}" for end in ("start", "finish", "error"))

#: What entering each state does, whichever row of TABLE enters it: the task and its
#: follow-up, the columns a commit writes and the notification it sends (entered from
#: another state, or again from itself), the timeout's clock, the events taken early.
ENTRIES: dict[State, Entry] = {
    S.STARTING: Entry(
        task=Task.START,
        follow_up=E.WAIT,
        entered=Effects(_NEW_RUN, START),
        again=NOTHING,  # a repeated start is the same introspection, not a new one
        times_out=Clock.STARTED,
        early=frozenset({E.CONTINUE}),  # the ramdisk was faster than the automatic `wait`
    ),
    S.WAITING: Entry(times_out=Clock.STARTED),
    S.PROCESSING: Entry(task=Task.PROCESS, follow_up=E.FINISH, times_out=Clock.STARTED),
    S.REAPPLYING: Entry(
        task=Task.REAPPLY,
        follow_up=E.FINISH,
        entered=_REOPENED,
        again=_REOPENED,
        times_out=Clock.ENTERED,
    ),
    S.ENROLLING: Entry(
        task=Task.ENROLL, follow_up=E.CONTINUE, entered=Effects(_NEW_RUN), times_out=Clock.STARTED
    ),
    S.FINISHED: Entry(
        task=Task.END,
        entered=Effects(Writes(finished_at=NOW, error=CLEARED), FINISH),
        again=Effects(_NOTE, FINISH),
    ),
    S.ERROR: Entry(
        task=Task.END,
        entered=Effects(Writes(finished_at=NOW, error=REASON), FAIL),
        again=Effects(_NOTE, FAIL),
    ),
}

#: The states that time out, by the node column their timeout counts from.
TIMED: dict[Clock, frozenset[State]] = {
    clock: frozenset(s for s, entry in ENTRIES.items() if entry.times_out is clock)
    for clock in Clock
}


def effects_of(source: State | str | None, target: State | str) -> Effects:
    """What a commit from `source` into `target` writes and sends (see ENTRIES)."""
    entry = ENTRIES[State(target)]
    return entry.again if source == target else entry.entered


#: The whole transition table. The design's rows come first, exactly as written.
TABLE: tuple[Row, ...] = (
    Row(None, E.INSPECT, S.STARTING, "design", "API request"),
    Row(S.STARTING, E.INSPECT, S.STARTING, "design", "a repeated start is harmless"),
    Row(S.STARTING, E.WAIT, S.WAITING, "design", "automatic S~, reentrant"),
    Row(S.WAITING, E.WAIT, S.WAITING, "design", "a redelivered S~ is harmless"),
    Row(S.WAITING, E.TIMEOUT, S.ERROR, "design", "periodic task", TIMEOUT_REASON),
    Row(S.WAITING, E.ABORT, S.ERROR, "design", "API request", ABORT_REASON),
    Row(S.WAITING, E.CONTINUE, S.PROCESSING, "design", "strict (non-reentrant)"),
    Row(S.PROCESSING, E.CONTINUE, S.ERROR, "design", "deja vu", DEJA_VU_REASON),
    Row(S.PROCESSING, E.FINISH, S.FINISHED, "design", "automatic F~, reentrant"),
    Row(S.FINISHED, E.INSPECT, S.STARTING, "design", ""),
    Row(S.FINISHED, E.ABORT, S.ERROR, "design", "", ABORT_REASON),
    Row(S.ERROR, E.INSPECT, S.STARTING, "design", ""),
    # What ironic-inspector added on top, and the gaps it left, fixed.
    *_error_rows(
        (S.STARTING, S.PROCESSING, S.REAPPLYING, S.ENROLLING),
        E.TIMEOUT,
        TIMEOUT_REASON,
        "periodic task",
    ),
    *_error_rows(
        (S.STARTING, S.WAITING, S.PROCESSING, S.REAPPLYING, S.ENROLLING),
        E.ERROR,
        None,
        "a task failed or the ramdisk reported an error",
    ),
    Row(S.FINISHED, E.REAPPLY, S.REAPPLYING, "addition", "API: reapply stored data"),
    Row(S.ERROR, E.REAPPLY, S.REAPPLYING, "addition", "API: reapply stored data"),
    Row(S.REAPPLYING, E.FINISH, S.FINISHED, "addition", "automatic F~, reentrant"),
    Row(None, E.ENROLL, S.ENROLLING, "addition", "discovery of an unknown node"),
    Row(S.ENROLLING, E.CONTINUE, S.PROCESSING, "addition", "strict (non-reentrant)"),
    Row(
        S.FINISHED,
        E.POWER_OFF_FAILED,
        S.FINISHED,
        "addition",
        "the final power-off failed: its error recorded, still finished",
    ),
)
del S, E, NOW, CLEARED, REASON, START, FINISH, FAIL


@dataclasses.dataclass(frozen=True)
class Transition(_Entering):
    """The answer of the machine: where `event` takes a node in `source`, the task to
    run once it is committed, and the event that follows when the task succeeded."""

    source: State | None
    event: Event
    target: State
    reason: str | None

    @property
    def is_strict(self) -> bool:
        return self.event in STRICT_EVENTS

    @property
    def effects(self) -> Effects:
        """What committing it writes and sends."""
        return effects_of(self.source, self.target)


class Machine:
    """Builds the automaton once from TABLE; `advance` works on a copy, so it is thread-safe."""

    def __init__(self, table: tuple[Row, ...] = TABLE) -> None:
        self._rows = {(row.source, row.event): row for row in table}
        if len(self._rows) != len(table):
            raise ValueError("the transition table has two rows for one (state, event)")
        prototype = machines.FiniteMachine()
        prototype.add_state(_NONE)
        for state in State:
            prototype.add_state(state.value)
        for row in table:
            source = _NONE if row.source is None else row.source.value
            prototype.add_transition(source, row.target.value, row.event.value)
        prototype.freeze()
        self._prototype = prototype

    def can(self, state: State | None, event: Event) -> bool:
        return (state, event) in self._rows

    def advance(self, state: State | None, event: Event) -> Transition:
        """The transition `event` makes from `state`; InvalidTransition if there is none."""
        fsm = self._prototype.copy(shallow=True)
        fsm.initialize(_NONE if state is None else State(state).value)
        try:
            fsm.process_event(Event(event).value)
        except automaton_errors.NotFound as exc:
            where = "a node with no introspection" if state is None else f"state {state}"
            raise InvalidTransition(f"event {event} is not allowed in {where}") from exc
        target = State(cast(str, fsm.current_state))  # set: it just processed an event
        row = self._rows[(state, Event(event))]
        return Transition(row.source, row.event, target, row.reason)

    def resume(self, source: State | None, event: Event, target: State) -> Transition:
        """The transition a committed request made (from its request row): its task runs
        again when its worker died before finishing it."""
        row = self._rows.get((source, event))
        if row is None or row.target is not target:  # a row of an older table
            return Transition(source, event, target, None)
        return Transition(row.source, row.event, target, row.reason)

    def rows(self) -> tuple[Row, ...]:
        return tuple(self._rows.values())
