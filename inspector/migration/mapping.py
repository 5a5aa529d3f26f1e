"""What importing from ironic-inspector means: its states mapped to ours, which side of a
node is newer, what a step did, and the report. Pure: no database, no I/O.
"""

import dataclasses
import enum
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from inspector.machine import ABORT_REASON, State
from inspector.migration.ironic_inspector_db import SourceNode

#: ironic-inspector's states that are ours too, with the same meaning. `waiting` waits
#: for the ramdisk, which will post to whichever service answers: it stays waiting.
SAME_STATES = frozenset({"waiting", "finished", "error"})
#: Its states whose work ran in threads of the ironic-inspector process: once that process
#: stopped, nothing resumes them (upstream they sit there until the time-out). Imported
#: as `error`, so that an operator can start them again at once.
INTERRUPTED_STATES = frozenset({"starting", "processing", "reapplying", "enrolling"})
#: `aborting` is an abort whose end (power off, then `error`) was never recorded.
ABORTING = "aborting"

INTERRUPTED_REASON = (
    "Interrupted: ironic-inspector stopped while the introspection was {state}; "
    "imported as failed, start it again"
)

Validator = Callable[[dict[str, Any]], dict[str, Any]]


class Outcome(enum.StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"
    KEEP = "keep"  # ours is newer or differs: left alone, reported
    REJECT = "reject"  # cannot be imported, reported

    def phrase(self, dry_run: bool) -> str:
        if dry_run:
            special = {
                Outcome.UNCHANGED: "unchanged",
                Outcome.KEEP: "would be left alone",
                Outcome.REJECT: "would be rejected",
            }
            return special.get(self, f"would {self.value}")
        return {
            Outcome.CREATE: "created",
            Outcome.UPDATE: "updated",
            Outcome.DELETE: "deleted",
            Outcome.UNCHANGED: "unchanged",
            Outcome.KEEP: "left alone",
            Outcome.REJECT: "rejected",
        }[self]


#: Outcomes that write.
WRITES = frozenset({Outcome.CREATE, Outcome.UPDATE, Outcome.DELETE})


@dataclasses.dataclass(frozen=True)
class Step:
    """What the import does (or would do) with one thing: a node's status, its lookup
    attributes, one of its data documents, or a rule."""

    kind: str
    ident: str
    outcome: Outcome
    detail: str = ""

    def render(self, dry_run: bool) -> str:
        text = f"{self.kind} {self.ident}: {self.outcome.phrase(dry_run)}"
        return f"{text}: {self.detail}" if self.detail else text


@dataclasses.dataclass
class Report:
    dry_run: bool
    steps: list[Step] = dataclasses.field(default_factory=list)

    def count(self, kind: str, outcome: Outcome) -> int:
        return sum(1 for s in self.steps if s.kind == kind and s.outcome == outcome)

    @property
    def writes(self) -> int:
        return sum(1 for s in self.steps if s.outcome in WRITES)

    def summary(self) -> str:
        lines = []
        for kind in ("node", "attributes", "processed data", "raw data", "rule"):
            counts = Counter(s.outcome for s in self.steps if s.kind == kind)
            parts = [f"{n} {outcome.phrase(self.dry_run)}" for outcome, n in counts.items()]
            lines.append(f"{kind}: {', '.join(parts) if parts else 'none'}")
        if self.dry_run:
            lines.append("dry run: nothing was written")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Status:
    """A node's status as both sides can state it."""

    state: str
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    manage_boot: bool

    @property
    def age(self) -> tuple[datetime, datetime]:
        """Later is newer: a later start, or the same start and a later end."""
        start = self.started_at or datetime.min
        return start, self.finished_at or start


def map_status(node: SourceNode) -> tuple[Status | None, str]:
    """Our status for an ironic-inspector node, and a note for the operator ("" if none);
    None for a state that ironic-inspector never had."""
    manage_boot = True if node.manage_boot is None else bool(node.manage_boot)
    if node.state in SAME_STATES:
        status = Status(node.state, node.started_at, node.finished_at, node.error, manage_boot)
        return status, ""
    if node.state in INTERRUPTED_STATES | {ABORTING}:
        # The end was never recorded; its start stands in, so that every run maps it alike.
        finished_at = node.finished_at or node.started_at
        reason = ABORT_REASON if node.state == ABORTING else None
        reason = reason or INTERRUPTED_REASON.format(state=node.state)
        note = f"was {node.state} in ironic-inspector: imported as error"
        if node.state == ABORTING:
            note += " (its power off may not have happened: check the node)"
        status = Status(State.ERROR.value, node.started_at, finished_at, reason, manage_boot)
        return status, note
    return None, f"unknown ironic-inspector state {node.state!r}"


def decide(wanted: Status, ours: Status | None) -> Outcome:
    if ours is None:
        return Outcome.CREATE
    if wanted == ours:
        return Outcome.UNCHANGED
    return Outcome.UPDATE if wanted.age > ours.age else Outcome.KEEP


def decide_document(wanted: Any, ours: Any) -> Outcome | None:
    """For attributes and data: None when neither side has any."""
    if wanted == ours:
        return Outcome.UNCHANGED if wanted else None
    if not ours:
        return Outcome.CREATE
    return Outcome.UPDATE if wanted else Outcome.DELETE


def wanted_attributes(source: dict[str, set[str]]) -> dict[str, list[str]]:
    """ironic-inspector's attribute names are ours (mac, bmc_address); values lowercased,
    as our lookup stores and matches them."""
    result = {name: sorted({v.lower() for v in values}) for name, values in source.items()}
    return {name: values for name, values in sorted(result.items()) if values}


def _describe(status: Status) -> str:
    text = status.state
    if status.started_at:
        text += f", started {status.started_at.isoformat()}"
    if status.finished_at:
        text += f", ended {status.finished_at.isoformat()}"
    return text


def node_detail(outcome: Outcome, wanted: Status, ours: Status | None, note: str) -> str:
    if outcome == Outcome.CREATE or ours is None:
        detail = _describe(wanted)
    elif outcome == Outcome.UPDATE:
        detail = f"{_describe(ours)} -> {_describe(wanted)}"
    elif outcome == Outcome.KEEP:
        detail = (
            f"Inspector's record ({_describe(ours)}) is as new as or newer than "
            f"ironic-inspector's ({_describe(wanted)})"
        )
    else:
        detail = ""
    return "; ".join(part for part in (detail, note) if part)


def comparable(rule: dict[str, Any]) -> dict[str, Any]:
    """A rule with the defaults our store fills in, for comparing two rules."""
    conditions = [
        {**c, "multiple": c.get("multiple", "any"), "invert": bool(c.get("invert", False))}
        for c in rule.get("conditions") or []
    ]
    return {
        "uuid": rule["uuid"],
        "description": rule.get("description"),
        "scope": rule.get("scope"),
        "conditions": conditions,
        "actions": list(rule["actions"]),
    }
