"""Root device hints as Ironic defines them (operators such as '>=', 's==', '<in>', '<or>'),
matched against the inventory's disks. Pure functions: no configuration, no Ironic.
"""

import ast
import copy
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

GiB = 1024**3
#: IPA never guesses a root disk smaller than this when the node has no hints.
MIN_DISK_SIZE = 4 * GiB

#: Hint name -> its type, as Ironic validates node.properties["root_device"].
HINT_TYPES: dict[str, type] = {
    "size": int,
    "model": str,
    "wwn": str,
    "serial": str,
    "vendor": str,
    "wwn_with_extension": str,
    "wwn_vendor_extension": str,
    "name": str,
    "rotational": bool,
    "hctl": str,
    "by_path": str,
}


def _all_in(value: Any, *wanted: str) -> bool:
    found = ast.literal_eval(str(value))
    if not isinstance(found, list):
        raise ValueError("<all-in> must compare with a list literal")
    return all(item in found for item in wanted)


#: oslo.utils' specs_matcher operators, which Ironic's hints use ('=' means '>=' there).
OPERATORS: dict[str, Callable[..., bool]] = {
    "<all-in>": _all_in,
    "<in>": lambda x, y: y in x,
    "<or>": lambda x, *y: any(x == item for item in y),
    "s==": operator.eq,
    "s!=": operator.ne,
    "s<=": operator.le,
    "s>=": operator.ge,
    "s<": operator.lt,
    "s>": operator.gt,
    "==": lambda x, y: float(x) == float(y),
    "!=": lambda x, y: float(x) != float(y),
    "<=": lambda x, y: float(x) <= float(y),
    ">=": lambda x, y: float(x) >= float(y),
    "<": lambda x, y: float(x) < float(y),
    ">": lambda x, y: float(x) > float(y),
    "=": lambda x, y: float(x) >= float(y),
}
_OPERATOR = re.compile("|".join(re.escape(op) for op in OPERATORS))
_ATOM = re.compile(r"\S+")
_TRUE = {"1", "t", "true", "on", "y", "yes"}
_FALSE = {"0", "f", "false", "off", "n", "no"}


def _scan(text: str) -> list[tuple[bool, str]]:
    """(is_operator, token) pairs: an operator wherever one starts, else a word."""
    tokens: list[tuple[bool, str]] = []
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return tokens
        operator_found = _OPERATOR.match(text, position)
        found = operator_found or _ATOM.match(text, position)
        if found is None:  # unreachable: a non-space character always starts a word
            return tokens
        tokens.append((operator_found is not None, found.group()))
        position = found.end()


def tokens(spec: str) -> list[str]:
    """The specs_matcher grammar: [value], [op, value], ['<or>', v...], ['<all-in>', v...].

    What does not parse is one plain value, as in specs_matcher."""
    scanned = _scan(spec)
    words = [word for is_op, word in scanned]
    kinds = [is_op for is_op, word in scanned]
    if not scanned:
        return [spec]
    if words[0] == "<or>":
        values: list[str] = []

        while len(kinds) >= 2 * len(values) + 2:
            at = 2 * len(values)
            if words[at] != "<or>" or kinds[at + 1]:
                break
            values.append(words[at + 1])
        return ["<or>", *values] if values else [spec]
    if words[0] == "<all-in>":
        values = []
        for is_op, word in scanned[1:]:
            if is_op:
                break
            values.append(word)
        return ["<all-in>", *values] if values else [spec]
    if kinds[0]:
        return [words[0], words[1]] if len(words) > 1 and not kinds[1] else [spec]
    return [words[0]]


def specs_match(value: Any, spec: str) -> bool:
    """specs_matcher.match: a plain value compares equal, else the operator decides."""
    tree = tokens(spec)
    if len(tree) == 1:
        return tree[0] == value
    return bool(OPERATORS[tree[0]](value, *tree[1:]))


def _bool(value: Any) -> bool:
    """oslo.utils' strict bool_from_string."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{value!r} is not a Boolean")


def _operator_and_values(expression: Any, name: str) -> tuple[str, list[str]]:
    text = str(expression).strip().lower()
    if not text:
        raise ValueError(f'Root device hint "{name}" expression is empty')
    tree = tokens(text)
    if len(tree) <= 1:
        return "", [text]
    op = tree[0]
    return op, [value.strip() for value in re.split(re.escape(op), text) if value]


def _normalise(expression: Any, name: str) -> str:
    """Values lowercased and URL-quoted (spaces and all), operators kept: Ironic's form."""
    op, values = _operator_and_values(expression, name)
    joined = op.join(f" {quote(value)} " for value in values)
    return (op + joined).strip()


def parse(hints: dict[str, Any]) -> dict[str, Any]:
    """Validated hints with an explicit operator each; ValueError when invalid."""
    invalid = set(hints) - set(HINT_TYPES)
    if invalid:
        raise ValueError(
            f'The hints "{", ".join(sorted(invalid))}" are invalid. '
            f'Valid hints are: "{", ".join(HINT_TYPES)}"'
        )
    parsed = copy.deepcopy(hints)
    for name, expression in hints.items():
        kind = HINT_TYPES[name]
        if kind is str:
            if not isinstance(expression, str):
                raise ValueError(f'Root device hint "{name}" is not a string value')
            parsed[name] = _normalise(expression, name)
        elif kind is int:
            for value in _operator_and_values(expression, name)[1]:
                try:
                    number = int(value)
                except ValueError:
                    raise ValueError(f'Root device hint "{name}" is not an integer') from None
                if number <= 0:
                    raise ValueError(f'Root device hint "{name}" should be a positive integer')
        else:
            try:
                parsed[name] = _bool(expression)
            except ValueError:
                raise ValueError(f'Root device hint "{name}" is not a Boolean value') from None
    for name, expression in parsed.items():
        if HINT_TYPES[name] is bool or len(tokens(str(expression))) > 1:
            continue
        parsed[name] = f"{'s==' if HINT_TYPES[name] is str else '=='} {expression}"
    return parsed


def _matches(disk: dict[str, Any], name: str, hint: Any) -> bool:
    kind = HINT_TYPES[name]
    value = disk.get(name)
    if kind is bool:
        try:
            return _bool(value) == hint
        except ValueError:
            return False
    if kind is str:
        try:
            value = _normalise(value, name)
        except ValueError:
            return False  # an empty attribute never matches
    if name == "size":
        if not isinstance(value, int | float):
            return False
        value = value / GiB  # hints are in GiB, as in Ironic (no rounding)
    return specs_match(value, hint)


def find(disks: list[dict[str, Any]], hints: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every disk satisfying all the hints, in inventory order; ValueError for bad hints."""
    parsed = parse(hints)
    for disk in disks:
        if all(_matches(disk, name, hint) for name, hint in parsed.items()):
            yield disk


def match(disks: list[dict[str, Any]], hints: dict[str, Any]) -> dict[str, Any] | None:
    """The first disk satisfying the hints, or None."""
    return next(find(disks, hints), None)


def guess(disks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """IPA's choice without hints: the smallest disk of at least MIN_DISK_SIZE."""
    sized = [d for d in disks if isinstance(d.get("size"), int) and d["size"] >= MIN_DISK_SIZE]
    return min(sized, key=lambda d: d["size"], default=None)
