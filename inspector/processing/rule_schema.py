"""The vocabulary of introspection rules: condition operators, actions, their parameters,
and the validation of a rule document sent to POST /v1/rules. Evaluation lives elsewhere.

Refusals are worded as ironic-inspector 12.5's rules.py words them where it refuses the
same, and say where the problem is after its headings otherwise.
"""

import ipaddress
import uuid as uuid_module
from typing import Any, NoReturn

from inspector.errors import BadRequest
from inspector.processing import rule_actions, rule_conditions, rule_regex
from inspector.processing.context import ProcessingError

#: Condition operators and the parameters each requires.
CONDITIONS: dict[str, tuple[str, ...]] = {
    "eq": ("value",),
    "ne": ("value",),
    "lt": ("value",),
    "gt": ("value",),
    "le": ("value",),
    "ge": ("value",),
    "in-net": ("value",),
    "matches": ("value",),
    "contains": ("value",),
    "is-empty": (),
}

#: Actions, their required and optional parameters.
ACTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fail": (("message",), ()),
    "set-attribute": (("path", "value"), ("reset_interfaces",)),
    "set-capability": (("name",), ("value",)),
    "extend-attribute": (("path", "value"), ("unique",)),
    "add-trait": (("name",), ()),
    "remove-trait": (("name",), ()),
}

#: Operators whose value is a regular expression, run by RE2 (see rule_regex).
PATTERN_OPS = ("matches", "contains")
MULTIPLE = ("any", "all", "first")
RULE_KEYS = {"uuid", "description", "conditions", "actions", "scope"}
#: Longest scope a rule may have (ironic-inspector's column, and ours).
MAX_SCOPE_LENGTH = 255


def _fail(where: str, message: str) -> NoReturn:
    group = where.partition("[")[0]
    if group in ("conditions", "actions"):  # ironic-inspector's rules._validate_<group>
        raise BadRequest(f"Validation failed for {group}: {where}: {message}")
    raise BadRequest(f"Invalid rule: {where}: {message}")


def _refuse_parameters(kind: str, name: str, missing: list[str], unexpected: list[str]) -> None:
    """ironic-inspector's words (plugins.base.WithValidation.validate, in its
    rules._validate_conditions and _validate_actions) for missing or extra parameters."""
    problems = []
    if missing:
        problems.append(f"missing required parameter(s): {', '.join(missing)}")
    if unexpected:
        problems.append(f"unexpected parameter(s): {', '.join(unexpected)}")
    if problems:
        raise BadRequest(f"Invalid parameters for {kind} {name}: {'; '.join(problems)}")


def _check_field(field: str) -> None:
    """A condition's field, parsed as evaluation parses it; refused in ironic-inspector's
    words (its rules._validate_conditions)."""
    scheme, sep, _ = field.partition("://")
    if sep and scheme not in rule_conditions.SCHEMES:
        raise BadRequest(
            f"Unsupported scheme for field: {scheme}, valid values are node:// or data://"
        )
    try:
        rule_conditions.parse_field(field)
    except ValueError as exc:
        raise BadRequest(f"Unable to parse field JSON path {field}: {exc}") from None


def _check_condition(index: int, condition: Any) -> dict[str, Any]:
    where = f"conditions[{index}]"
    if not isinstance(condition, dict):
        _fail(where, "must be an object")
    op = condition.get("op")
    if op not in CONDITIONS:
        _fail(where, f"unknown op {op!r}; known: {', '.join(CONDITIONS)}")
    field = condition.get("field")
    if not isinstance(field, str) or not field:
        _fail(where, "field must be a non-empty string")
    _check_field(field)
    if condition.get("multiple", "any") not in MULTIPLE:
        _fail(where, f"multiple must be one of {', '.join(MULTIPLE)}")
    if not isinstance(condition.get("invert", False), bool):
        _fail(where, "invert must be a boolean")
    _refuse_parameters("operator", op, [n for n in CONDITIONS[op] if n not in condition], [])
    _check_value(f"{where} (field {field!r})", op, condition.get("value"))
    return condition


def _check_value(where: str, op: str, value: Any) -> None:
    # "Invalid parameters for operator ..." as ironic-inspector's NetCondition and
    # ReCondition validate; the reason is ours (RE2's, Python's ipaddress).
    if op == "in-net":
        try:
            ipaddress.ip_network(str(value), strict=False)
        except ValueError as exc:
            raise BadRequest(
                f"Invalid parameters for operator in-net: invalid value: {exc}"
            ) from None
    if op in PATTERN_OPS:
        if not isinstance(value, str):
            _fail(where, f"{op} value must be a regular expression string")
        try:
            rule_regex.compile_pattern(value)
        except ValueError as exc:
            raise BadRequest(
                f"Invalid parameters for operator {op}: invalid regular expression: "
                f"{rule_regex.shown(value)} is not a regular expression RE2 accepts: {exc}"
            ) from None


def _check_action(index: int, action: Any) -> dict[str, Any]:
    where = f"actions[{index}]"
    if not isinstance(action, dict):
        _fail(where, "must be an object")
    name = action.get("action")
    if name not in ACTIONS:
        _fail(where, f"unknown action {name!r}; known: {', '.join(ACTIONS)}")
    required, optional = ACTIONS[name]
    missing = [key for key in required if key not in action]
    unknown = sorted(set(action) - {"action", *required, *optional})
    _refuse_parameters("action", name, missing, unknown)
    for key in ("path", "name", "message"):
        if key in action and (not isinstance(action[key], str) or not action[key]):
            _fail(where, f"{key} must be a non-empty string")
    for key in rule_actions.FORMATTED_PARAMS:
        if key in action:
            # Refused now what formatting would refuse whatever the data, as a 400
            # naming the action and the parameter, not as a failed introspection later.
            try:
                rule_actions.check_formats(action[key])
            except ProcessingError as exc:
                _fail(f"{where} ({name}) {key}", exc.message)
    return action


def validate_rule(body: Any) -> dict[str, Any]:
    """The rule document, checked and completed (uuid, defaults); BadRequest otherwise."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid rule: the body must be a JSON object")
    unknown = set(body) - RULE_KEYS
    if unknown:
        _fail("body", f"unknown fields {', '.join(sorted(unknown))}")
    rule_uuid = body.get("uuid") or str(uuid_module.uuid4())
    try:
        rule_uuid = str(uuid_module.UUID(str(rule_uuid)))
    except ValueError:
        raise BadRequest("Invalid UUID value") from None  # ironic-inspector's main.api_rules
    for key in ("description", "scope"):
        if body.get(key) is not None and not isinstance(body[key], str):
            _fail(key, "must be a string")
    if len(body.get("scope") or "") > MAX_SCOPE_LENGTH:  # as its main.api_rules
        raise BadRequest(
            f"Invalid scope: the length of the scope should be within {MAX_SCOPE_LENGTH} characters"
        )
    conditions = body.get("conditions") or []
    actions = body.get("actions")
    if not isinstance(conditions, list):
        _fail("conditions", "must be a list")
    if not isinstance(actions, list) or not actions:
        _fail("actions", "at least one action is required")
    return {
        "uuid": rule_uuid,
        "description": body.get("description"),
        "scope": body.get("scope"),
        "conditions": [_check_condition(i, c) for i, c in enumerate(conditions)],
        "actions": [_check_action(i, a) for i, a in enumerate(actions)],
    }
