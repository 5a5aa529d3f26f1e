"""Evaluation of introspection rules against one processing run: which rules apply to the
node (scope), which match (conditions), running their actions in order, and the time bound
of it all. Rules only record changes into the context (see rule_actions); storing rules is
inspector.store.rules.
"""

import dataclasses
import enum
import logging
import time
import typing
from collections.abc import Callable
from typing import Any

from inspector.ironic import IronicNode
from inspector.processing import rule_actions, rule_conditions, rule_schema
from inspector.processing.context import ProcessingContext, ProcessingError

LOG = logging.getLogger(__name__)


def applies(rule: dict[str, Any], node: IronicNode) -> bool:
    """A rule without scope applies to every node; one with a scope only to the nodes whose
    properties.inspection_scope equals it."""
    scope = rule.get("scope")
    return not scope or node.properties.get("inspection_scope") == scope


def _name(rule: dict[str, Any]) -> str:
    description = rule.get("description")
    return f'"{description}" ({rule.get("uuid")})' if description else str(rule.get("uuid"))


class RulesTimeout(ProcessingError):
    """The rules of one node ran past [processing] rules_evaluation_timeout."""


class Deadline:
    """[processing] rules_evaluation_timeout from the evaluation's start, on `clock`;
    check() raises RulesTimeout naming the rule being evaluated once it has passed."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.clock = clock
        self.end = clock() + seconds
        self.rule: dict[str, Any] = {}

    def check(self) -> None:
        if self.clock() > self.end:
            raise RulesTimeout(
                f"Introspection rule {_name(self.rule)} stopped: the rules ran past "
                f"[processing] rules_evaluation_timeout ({self.seconds:g} s); "
                "nothing was sent to Ironic"
            )


def _where(index: int, condition: Any) -> str:
    if not isinstance(condition, dict):
        return f"condition {index}"
    return f"condition {index} ({condition.get('op')} on {condition.get('field')!r})"


def _patterns(rule: dict[str, Any]) -> None:
    """ProcessingError when RE2 refuses a pattern of the rule, whatever the data: a rule
    stored before RE2 was the engine, or imported from ironic-inspector."""
    for index, condition in enumerate(rule.get("conditions") or ()):
        if isinstance(condition, dict) and condition.get("op") in rule_schema.PATTERN_OPS:
            try:
                rule_conditions.pattern_of(condition)
            except ProcessingError as exc:
                raise ProcessingError(f"{_where(index, condition)}: {exc}") from None


class Outcome(enum.StrEnum):
    """What became of one rule on one node."""

    OUT_OF_SCOPE = "out of scope"
    NOT_MATCHED = "not matched"
    MATCHED = "matched"


class Seen(typing.NamedTuple):
    """One condition as the rules check saw it."""

    index: int  # type: ignore[assignment]  # shadows tuple.index: the report's own name
    found: list[Any]
    holds: bool
    #: Why it could not be tested, after an earlier condition already failed (processing
    #: stops before it; reaching it, the rule would fail instead).
    error: str | None = None


@dataclasses.dataclass
class Trace:
    """What the evaluation of one rule saw, for the rules check: each condition tested,
    each action as formatted."""

    conditions: list[Seen] = dataclasses.field(default_factory=list)
    actions: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _matches(
    rule: dict[str, Any], sources: dict[str, Any], deadline: Deadline, trace: Trace | None
) -> bool:
    """Whether every condition holds; the first that does not ends it, unless a trace
    is kept: then every condition is tested and recorded."""
    _patterns(rule)
    matched = True
    for index, condition in enumerate(rule.get("conditions") or ()):
        try:
            holds, found = rule_conditions.outcome(condition, sources, deadline.check)
        except RulesTimeout:
            raise
        except ProcessingError as exc:
            if trace is None or matched:  # processing gets here: the rule fails
                raise ProcessingError(f"{_where(index, condition)}: {exc}") from None
            trace.conditions.append(Seen(index, [], False, exc.message))
            continue
        if trace is not None:
            trace.conditions.append(Seen(index, found, holds))
        elif not holds:
            return False
        matched = matched and holds
    return matched


def run_rule(
    rule: dict[str, Any],
    context: ProcessingContext,
    sources: dict[str, Any],
    deadline: Deadline,
    trace: Trace | None = None,
) -> Outcome:
    """One rule on the node: its scope, its conditions, then (when they all hold) its
    actions recorded into context.changes, in order. The one evaluation of a rule, for
    processing and for the rules check (which keeps a `trace` and applies nothing).

    Raises ProcessingError naming the rule (a fail action, an action that cannot be
    recorded, a broken condition, a pattern RE2 refuses), or RulesTimeout."""
    if not applies(rule, context.node):
        return Outcome.OUT_OF_SCOPE
    deadline.rule = rule
    try:
        if not _matches(rule, sources, deadline, trace):
            return Outcome.NOT_MATCHED
        for action in rule["actions"]:
            params = rule_actions.formatted(action, sources)
            if trace is not None:
                trace.actions.append({"action": action.get("action"), **params})
            rule_actions.record(action.get("action"), params, context, sources["node"])
            deadline.check()
    except RulesTimeout:
        raise
    except ProcessingError as exc:
        raise ProcessingError(f"Introspection rule {_name(rule)} failed: {exc}") from exc
    return Outcome.MATCHED


def sources_of(context: ProcessingContext) -> dict[str, Any]:
    """What conditions and formatting read: the data and the node, as they were before
    any rule ran (actions record changes and modify neither)."""
    return {"data": context.data, "node": dataclasses.asdict(context.node)}


def evaluate(
    rules: list[dict[str, Any]],
    context: ProcessingContext,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Run the actions of every rule that applies to the node and matches, in the given
    (creation) order; the uuids of those rules.

    The first error (a fail action, an action that cannot be recorded, a broken
    condition, a pattern RE2 refuses) stops the evaluation with a ProcessingError naming
    the rule; what earlier rules recorded stays in context.changes, for the caller to
    drop. So does RulesTimeout, once the evaluation has taken longer than [processing]
    rules_evaluation_timeout on `clock`: it is checked after each value a condition
    tests, each condition and each action.
    """
    node_uuid = context.node.uuid
    sources = sources_of(context)
    deadline = Deadline(context.conf.processing.rules_evaluation_timeout, clock)
    ran = []
    for rule in rules:
        outcome = run_rule(rule, context, sources, deadline)
        LOG.log(
            logging.INFO if outcome == Outcome.MATCHED else logging.DEBUG,
            "[node %s] rule %s: %s",
            node_uuid,
            _name(rule),
            outcome.value,
        )
        if outcome == Outcome.MATCHED:
            ran.append(rule["uuid"])
    return ran
