"""Evaluation of introspection rules against one processing run: which rules apply to the
node (scope), which match (conditions), and running their actions in order. Rules only
record changes into the context (see rule_actions); storing rules is inspector.store.rules.
"""

import dataclasses
import logging
from typing import Any

from inspector.ironic import IronicNode
from inspector.processing import rule_actions, rule_conditions
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


def _matches(rule: dict[str, Any], sources: dict[str, Any]) -> bool:
    return all(rule_conditions.check(c, sources) for c in rule.get("conditions") or ())


def evaluate(rules: list[dict[str, Any]], context: ProcessingContext) -> list[str]:
    """Run the actions of every rule that applies to the node and matches, in the given
    (creation) order; the uuids of those rules.

    Conditions see the data and the node as they were before any rule ran: actions record
    changes and modify neither. The first error (a fail action, an action that cannot be
    recorded, a broken condition) stops the evaluation with a ProcessingError naming the
    rule; what earlier rules recorded stays in context.changes, for the caller to drop.
    """
    node_uuid = context.node.uuid
    sources = {"data": context.data, "node": dataclasses.asdict(context.node)}
    ran = []
    for rule in rules:
        if not applies(rule, context.node):
            LOG.debug("[node %s] rule %s: out of scope", node_uuid, _name(rule))
            continue
        try:
            if not _matches(rule, sources):
                LOG.debug("[node %s] rule %s: conditions not met", node_uuid, _name(rule))
                continue
            LOG.info("[node %s] rule %s matched, running its actions", node_uuid, _name(rule))
            for action in rule["actions"]:
                rule_actions.run(action, context, sources)
        except ProcessingError as exc:
            raise ProcessingError(f"Introspection rule {_name(rule)} failed: {exc}") from exc
        ran.append(rule["uuid"])
    return ran
