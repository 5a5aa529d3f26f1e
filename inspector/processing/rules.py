"""Evaluation of introspection rules against one processing run: which rules apply to the
node (scope), which match (conditions), running their actions in order, and the time bound
of it all. Rules only record changes into the context (see rule_actions); storing rules is
inspector.store.rules.
"""

import dataclasses
import logging
import time
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


class _Deadline:
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


def _matches(rule: dict[str, Any], sources: dict[str, Any], deadline: _Deadline) -> bool:
    _patterns(rule)
    for index, condition in enumerate(rule.get("conditions") or ()):
        try:
            holds = rule_conditions.check(condition, sources, deadline.check)
        except RulesTimeout:
            raise
        except ProcessingError as exc:
            raise ProcessingError(f"{_where(index, condition)}: {exc}") from None
        if not holds:
            return False
    return True


def evaluate(
    rules: list[dict[str, Any]],
    context: ProcessingContext,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Run the actions of every rule that applies to the node and matches, in the given
    (creation) order; the uuids of those rules.

    Conditions see the data and the node as they were before any rule ran: actions record
    changes and modify neither. The first error (a fail action, an action that cannot be
    recorded, a broken condition, a pattern RE2 refuses) stops the evaluation with a
    ProcessingError naming the rule; what earlier rules recorded stays in context.changes,
    for the caller to drop. So does RulesTimeout, once the evaluation has taken longer
    than [processing] rules_evaluation_timeout on `clock`: it is checked after each value
    a condition tests, each condition and each action.
    """
    node_uuid = context.node.uuid
    sources = {"data": context.data, "node": dataclasses.asdict(context.node)}
    deadline = _Deadline(context.conf.processing.rules_evaluation_timeout, clock)
    ran = []
    for rule in rules:
        if not applies(rule, context.node):
            LOG.debug("[node %s] rule %s: out of scope", node_uuid, _name(rule))
            continue
        deadline.rule = rule
        try:
            if not _matches(rule, sources, deadline):
                LOG.debug("[node %s] rule %s: conditions not met", node_uuid, _name(rule))
                continue
            LOG.info("[node %s] rule %s matched, running its actions", node_uuid, _name(rule))
            for action in rule["actions"]:
                rule_actions.run(action, context, sources)
                deadline.check()
        except RulesTimeout:
            raise
        except ProcessingError as exc:
            raise ProcessingError(f"Introspection rule {_name(rule)} failed: {exc}") from exc
        ran.append(rule["uuid"])
    return ran
