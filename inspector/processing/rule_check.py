"""The rules check: introspection rules evaluated against nodes' stored processed data
and their Ironic nodes, as processing would evaluate them (rules.run_rule), applying
nothing: what each condition found and decided, the actions as they would be formatted.
"""

import json
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from inspector.errors import BadRequest, NotFound
from inspector.ironic import IronicNode
from inspector.processing import rules as rule_engine
from inspector.processing.context import ProcessingContext, ProcessingError
from inspector.processing.rule_schema import validate_rule

#: Characters of a value found that the answer shows; a longer one is summarised.
MAX_SHOWN_VALUE = 1024


def rules_of(body: dict[str, Any], store: Any, check_shape: Callable[[Any], Any]) -> list[dict]:
    """The rules of a check's body: `rules` validated as rule creation validates them
    (`check_shape` is its JSON Schema check, then the vocabulary), or the stored rules
    of `uuids`; a 400 names the rule by its index."""
    if ("rules" in body) == ("uuids" in body):
        raise BadRequest("Invalid rules check: give either rules or uuids")
    if "uuids" in body:
        return [store.get_rule(uuid) for uuid in dict.fromkeys(body["uuids"])]
    checked = []
    for index, rule in enumerate(body["rules"]):
        try:
            checked.append(validate_rule(check_shape(rule)))
        except BadRequest as exc:
            raise BadRequest(f"rules[{index}]: {exc.message}") from None
    return checked


def nodes_of(body: dict[str, Any], cap: int) -> list[str]:
    """The node idents of a check's body (`node` or `nodes`), duplicates dropped; a 400
    when there are none or more than `cap`."""
    if ("node" in body) == ("nodes" in body):
        raise BadRequest("Invalid rules check: give either node or nodes")
    idents = list(dict.fromkeys([body["node"]] if "node" in body else body["nodes"]))
    if not idents:
        raise BadRequest("Invalid rules check: nodes is empty")
    if len(idents) > cap:
        raise BadRequest(
            f"Invalid rules check: {len(idents)} nodes, more than [api] "
            f"max_rules_check_nodes = {cap} per call"
        )
    return idents


def load_nodes(idents: Iterable[str], store: Any, ironic: Any) -> Iterator[tuple[IronicNode, dict]]:
    """Each node as Ironic has it and its stored processed data, read as the check comes
    to it (one node's data in memory at a time); NotFound naming the first node Ironic
    does not know or that has no processed data."""
    for ident in idents:
        node = ironic.get_node(ident)
        data = store.get_data(node.uuid, processed=True)
        if data is None:
            raise NotFound(
                f"Node {ident} has no stored processed data to check rules against "
                "(not introspected yet, or [processing] store_data is none)"
            )
        yield node, data


def check(
    conf: Any,
    rules: list[dict],
    nodes: Iterable[tuple[IronicNode, dict]],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[dict[str, Any]]:
    """Per node, per rule: what a processing of that data would do with the rule.

    The whole call has [processing] rules_evaluation_timeout, as one node's processing
    has: past it, the rule being evaluated says so and the nodes after it are not
    checked (their `error` says why), so that no call holds an API thread longer."""
    deadline = rule_engine.Deadline(conf.processing.rules_evaluation_timeout, clock)
    checked: list[dict[str, Any]] = []
    stopped = None
    for node, data in nodes:
        entry: dict[str, Any] = {
            "uuid": node.uuid,
            "name": node.name,
            "error": stopped,
            "rules": [],
        }
        checked.append(entry)
        if stopped is None:
            entry["rules"], stopped = check_node(conf, rules, node, data, deadline)
    return checked


def check_node(
    conf: Any, rules: list[dict], node: IronicNode, data: dict, deadline: rule_engine.Deadline
) -> tuple[list[dict[str, Any]], str | None]:
    """The rules in order on one node, on one context as processing has it (an action
    sees what earlier ones recorded), each rule on its own: an error of one (which would
    end a real introspection there) is reported and the next rule checked. With the
    results, why the check must stop (the time is up) or None."""
    context = ProcessingContext(node=node, ports=[], data=data, conf=conf)
    sources = rule_engine.sources_of(context)
    results = []
    for rule in rules:
        trace = rule_engine.Trace()
        try:
            outcome = rule_engine.run_rule(rule, context, sources, deadline, trace)
        except rule_engine.RulesTimeout as exc:
            results.append(_result(rule, rule_engine.Outcome.NOT_MATCHED, trace, exc.message))
            return results, f"not checked: the check ran past {_bound(conf)}"
        except ProcessingError as exc:
            results.append(_result(rule, rule_engine.Outcome.NOT_MATCHED, trace, exc.message))
        else:
            results.append(_result(rule, outcome, trace, None))
    return results, None


def _bound(conf: Any) -> str:
    seconds = conf.processing.rules_evaluation_timeout
    return f"[processing] rules_evaluation_timeout ({seconds:g} s)"


def _result(
    rule: dict, outcome: rule_engine.Outcome, trace: rule_engine.Trace, error: str | None
) -> dict[str, Any]:
    conditions = rule.get("conditions") or []
    return {
        "uuid": rule.get("uuid"),
        "description": rule.get("description"),
        "matched": outcome == rule_engine.Outcome.MATCHED and error is None,
        "outcome": "error" if error else outcome.value,
        "error": error,
        "conditions": [_condition(seen, conditions[seen.index]) for seen in trace.conditions],
        "actions": trace.actions if outcome == rule_engine.Outcome.MATCHED or error else [],
    }


def _condition(seen: rule_engine.Seen, condition: dict) -> dict[str, Any]:
    return {
        "index": seen.index,
        "field": condition.get("field"),
        "op": condition.get("op"),
        "value": condition.get("value"),
        "multiple": condition.get("multiple") or "any",
        "invert": bool(condition.get("invert", False)),
        "missing": not seen.found,
        "found": [shown(value) for value in seen.found],
        "result": seen.holds,
        "error": seen.error,
    }


def shown(value: Any) -> Any:
    """The value as found, or a summary of it when its JSON is over MAX_SHOWN_VALUE."""
    text = json.dumps(value, sort_keys=True, default=str)
    if len(text) <= MAX_SHOWN_VALUE:
        return value
    kinds: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    kind = kinds.get(type(value), "a value")
    return f"<{kind} of {len(text)} characters in JSON>"
