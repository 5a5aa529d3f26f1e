"""Renders the state machine's tables as docs/states.md (each state's entry effects, the
transitions, and a Mermaid diagram).

Generated documentation only; it decides nothing. `python -m inspector.statechart`.
"""

import enum
import sys

from inspector.effects import Effects, Writes
from inspector.machine import (
    ACTIVE_STATES,
    ENTRIES,
    STRICT_EVENTS,
    TABLE,
    Entry,
    Row,
    State,
)

HEADER = """# Introspection states

<!-- Generated from inspector/machine.py by `python -m inspector.statechart`;
     do not edit: tests/unit/test_machine.py fails when this file is stale. -->

The one transition table of the service. A worker computes every state change from it
and commits it with a compare-and-swap on the node's version, under the node lock.
Rows marked *design* are the original HA design's table, exactly; rows marked
*addition* are what ironic-inspector added on top and the gaps it left, fixed.

- **Strict** events ({strict}) take effect once: a second request for a node already
  past them ("deja vu") moves it to `error` instead of redoing the work. The same
  request delivered again (its worker died) is not redone either: its task runs again
  only if it never finished; if it did, only its follow-up is applied.
- All other events are **reentrant**: repeating them is harmless.
- Active states ({active}) each have an `error` and a `timeout` exit.
- `(none)` is a node with no introspection record yet.
- **task** is the work a worker does once the transition is committed
  (`inspector/worker/tasks.py`); **follow-up** the event it applies next when the task
  succeeded: at once, under the same lock, when that event's own transition has no task
  but the announcement `end`; through the work queue otherwise.
- The task `end` tells the PXE firewalls that the introspection ended (when they listen
  on the channel); without a channel it does nothing.
- The power actions of `start` (the power-on) and `process` (the final power-off) are
  confirmed by *check* requests on the work queue, not by events: a check moves no node
  while Ironic is at it (it comes back with the worker's back-off), asks Ironic again for
  an action Ironic lost, and ends the introspection with `error` when Ironic failed or
  refused the power-on or never finished it within `[ironic] power_confirm_timeout`;
  a final power-off that failed is recorded with `power-off-failed`, the introspection
  staying `finished` ([operations](operations.md#power-actions-confirmed)).

## Entering a state

What entering a state does is the same whichever transition enters it. Besides the
state and the version, a commit into a state writes the node's columns in **written**
(`now`: the commit's time; `cleared`: emptied; `reason`: the error message) and, when
notifications are on, writes the notification of the event type in **notification** in
the same transaction. **run** says what that does to the introspection: it starts a new
one, reopens an ended one, ends it, or goes on. A transition from a state into itself
(a repeated event) does what **again** says instead. A state with a **timeout clock**
goes to `error` with `timeout` once the periodic task finds that column older than
`[DEFAULT] timeout` (the introspection's start, or the node's last change: its entry
into the state). An event in **early** is refused in the state but not rejected: the
worker retries it until the state's follow-up has moved the node on.
"""


def _name(state: State | None) -> str:
    return "(none)" if state is None else state.value


def _value(member: enum.Enum | None) -> str:
    return "-" if member is None else member.value


def _writes(writes: Writes) -> str:
    return ", ".join(f"{column}: {value}" for column, value in writes.columns().items())


def _notification(effects: Effects) -> str:
    return "" if effects.notifies is None else f"`{effects.notifies}`"


def _effects(effects: Effects) -> str:
    said = (_writes(effects.writes), _notification(effects))
    return "; ".join(part for part in said if part) or "-"


def render_entries(entries: dict[State, Entry]) -> str:
    lines = [
        "| state | task | follow-up | run | written | notification | again "
        "| timeout clock | early |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for state, entry in entries.items():
        entered = entry.entered
        early = ", ".join(event.value for event in sorted(entry.early))
        lines.append(
            f"| {state.value} | {_value(entry.task)} | {_value(entry.follow_up)} "
            f"| {entered.run.value} | {_writes(entered.writes) or '-'} "
            f"| {_notification(entered) or '-'} "
            f"| {_effects(entry.again)} | {_value(entry.times_out)} | {early or '-'} |"
        )
    return "\n".join(lines)


def render_table(rows: tuple[Row, ...]) -> str:
    lines = [
        "| state | event | target | task | follow-up | kind | origin | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        kind = "strict" if row.event in STRICT_EVENTS else "reentrant"
        note = row.note + (f' (error: "{row.reason}")' if row.reason else "")
        lines.append(
            f"| {_name(row.source)} | {row.event.value} | {row.target.value} "
            f"| {_value(row.task)} | {_value(row.follow_up)} | {kind} | {row.origin} | {note} |"
        )
    return "\n".join(lines)


def render_diagram(rows: tuple[Row, ...]) -> str:
    lines = ["```mermaid", "stateDiagram-v2"]
    for row in rows:
        source = "[*]" if row.source is None else row.source.value
        event = row.event.value + ("!" if row.event in STRICT_EVENTS else "")
        lines.append(f"    {source} --> {row.target.value}: {event}")
    lines.append("```")
    return "\n".join(lines)


def render(rows: tuple[Row, ...] = TABLE) -> str:
    header = HEADER.format(
        strict=", ".join(f"`{e.value}`" for e in sorted(STRICT_EVENTS)),
        active=", ".join(f"`{s.value}`" for s in sorted(ACTIVE_STATES)),
    )
    return (
        f"{header}\n{render_entries(ENTRIES)}\n\n## Transitions\n\n{render_table(rows)}\n\n"
        f"## Diagram\n\n{render_diagram(rows)}\n"
    )


if __name__ == "__main__":
    sys.stdout.write(render())
