"""Conditions of introspection rules: the JSON path a field names, the values it finds in the
data or in the node, and the operators that test them. Reads only: records no changes.
Regular expressions are RE2's (rule_regex), never Python's backtracking `re`.
"""

import functools
import ipaddress
import json
import math
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any

from inspector.processing import rule_regex
from inspector.processing.context import ProcessingError

#: What a field's scheme names: the introspection data (`data://`, or no scheme), the node.
SCHEMES = ("data", "node")
#: One step of a path: ("key", name), ("values", None) for `*`, ("index", n), ("each", None).
Step = tuple[str, Any]

_STEP = re.compile(
    r"""(?P<dot>\.)?
    (?: (?P<name>[\w@-]+) | (?P<star>\*) | '(?P<squoted>[^']*)' | "(?P<dquoted>[^"]*)"
      | \[\s*(?P<index>\d+)\s*\] | \[\s*(?P<each>\*)\s*\] )""",
    re.VERBOSE,
)
# Unambiguous (one way to read any text), so linear on a long run of digits: the
# `\d+\.?\d*` it replaces took seconds, GIL held, on 10,000 digits and a letter.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


@functools.lru_cache(maxsize=512)
def parse_path(path: str) -> tuple[Step, ...]:
    """The steps of a jsonpath-rw style path (`a.b[0].c`, `a[*].b`, `a.*`, a leading `$.`);
    ValueError when it is not one."""
    text = path.strip()
    rooted = text.startswith("$")
    text = text[1:] if rooted else text
    if not text and not rooted:
        raise ValueError("empty path")
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            raise ValueError(f"cannot parse {text[pos:]!r} in {path!r}")
        bracket = match["index"] is not None or match["each"] is not None
        # A name needs a dot before it, except as the first step of a path without `$`.
        if not bracket and bool(match["dot"]) == (pos == 0 and not rooted):
            raise ValueError(f"misplaced '.' near {text[pos:]!r} in {path!r}")
        steps.append(_step_of(match))
        pos = match.end()
    return tuple(steps)


def _step_of(match: re.Match[str]) -> Step:
    if match["index"] is not None:
        return ("index", int(match["index"]))
    if match["each"] is not None:
        return ("each", None)
    if match["star"] is not None:
        return ("values", None)
    name = match["name"] if match["name"] is not None else match["squoted"]
    return ("key", name if name is not None else match["dquoted"])


def find(steps: tuple[Step, ...], root: Any) -> list[Any]:
    """Every value the path reaches from root, in document order."""
    values = [root]
    for kind, arg in steps:
        values = [found for value in values for found in _follow(kind, arg, value)]
    return values


def _follow(kind: str, arg: Any, value: Any) -> Iterator[Any]:
    if kind == "key":
        if isinstance(value, dict) and arg in value:
            yield value[arg]
    elif kind == "values":
        if isinstance(value, dict):
            yield from value.values()
    elif kind == "index":
        if isinstance(value, list) and arg < len(value):
            yield value[arg]
    elif isinstance(value, list):
        yield from value
    elif value is not None:
        # jsonpath-rw's `[*]` on a single value yields that value.
        yield value


def parse_field(field: str) -> tuple[str, tuple[Step, ...]]:
    """(scheme, steps) of a condition's field: `data://path`, `node://path` or a bare
    path (the data's); ValueError saying why when it is none of these. The one parser of
    fields: rule creation (rule_schema) refuses exactly what evaluation would."""
    scheme, sep, path = field.partition("://")
    if not sep:
        scheme, path = "data", field
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme}://, use data:// or node://")
    return scheme, parse_path(path)


def field_values(field: str, sources: dict[str, Any]) -> list[Any]:
    """The values a condition's field finds in sources ({"data", "node"})."""
    try:
        scheme, steps = parse_field(field)
    except ValueError as exc:
        raise ProcessingError(f"field {field!r}: {exc}") from exc
    return find(steps, sources[scheme])


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            number = float(text)
            return number if math.isfinite(number) else None
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool | dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _comparison(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def check(field: Any, value: Any) -> bool:
        if field is None or value is None:
            return False
        left, right = _number(field), _number(value)
        if left is not None and right is not None:
            return compare(left, right)
        return compare(_text(field), _text(value))

    return check


def _in_net(field: Any, value: Any) -> bool:
    if field is None:
        return False
    try:
        network = ipaddress.ip_network(str(value), strict=False)
    except ValueError as exc:
        raise ProcessingError(f"in-net: {value!r} is not a network") from exc
    try:
        address = ipaddress.ip_interface(str(field).strip()).ip
    except ValueError:
        return False
    return address in network


def pattern_of(condition: dict[str, Any]) -> rule_regex.RulePattern:
    """The RE2 pattern of a matches or contains condition; ProcessingError when RE2 refuses
    it (a rule stored before RE2, or imported: never run by Python's `re` instead)."""
    pattern = str(condition.get("value"))
    try:
        return rule_regex.compile_pattern(pattern)
    except ValueError as exc:
        shown = rule_regex.shown(pattern)
        raise ProcessingError(f"regular expression {shown} cannot be used: {exc}") from None


def _regex(search: bool) -> Callable[[Any, Any], bool]:
    def check(field: Any, value: Any) -> bool:
        if field is None:
            return False
        pattern = pattern_of({"value": value})
        try:
            return pattern.test(_text(field), search=search)
        except ValueError as exc:
            raise ProcessingError(str(exc)) from None

    return check


def _is_empty(field: Any, value: Any) -> bool:
    return field is None or (isinstance(field, str | list | dict) and not field)


#: Operator name -> test(field value, condition's value).
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _comparison(operator.eq),
    "ne": _comparison(operator.ne),
    "lt": _comparison(operator.lt),
    "gt": _comparison(operator.gt),
    "le": _comparison(operator.le),
    "ge": _comparison(operator.ge),
    "in-net": _in_net,
    "matches": _regex(search=False),
    "contains": _regex(search=True),
    "is-empty": _is_empty,
}


def check(
    condition: dict[str, Any],
    sources: dict[str, Any],
    tick: Callable[[], None] = lambda: None,
) -> bool:
    """Whether the condition holds (see outcome)."""
    return outcome(condition, sources, tick)[0]


def outcome(
    condition: dict[str, Any],
    sources: dict[str, Any],
    tick: Callable[[], None] = lambda: None,
) -> tuple[bool, list[Any]]:
    """Whether the condition holds, and the values its field found. `invert` applies to
    each value before `multiple` combines them; a field with no value makes every op but
    is-empty false. `tick` is called after each value is tested (the evaluation's time
    bound raises from it)."""
    op = condition.get("op")
    test = OPS.get(op) if isinstance(op, str) else None
    if test is None:
        raise ProcessingError(f"unknown condition op {op!r}")
    found = field_values(condition["field"], sources)
    tick()
    values = found
    if not values:
        if op != "is-empty":
            return False, found
        values = [None]
    invert = bool(condition.get("invert", False))

    def tested(value: Any) -> bool:
        result = test(value, condition.get("value")) != invert
        tick()
        return result

    results = (tested(value) for value in values)
    multiple = condition.get("multiple") or "any"
    if multiple == "first":
        return next(results), found
    if multiple == "all":
        return all(results), found
    if multiple == "any":
        return any(results), found
    raise ProcessingError(f"unknown multiple {multiple!r}")
