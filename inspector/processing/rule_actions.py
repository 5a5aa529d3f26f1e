"""Actions of introspection rules, and the formatting of their values from the data and the
node. Actions only record what they want into `context.changes`; they never call Ironic.
"""

import copy
import re
import string
from collections.abc import Callable
from typing import Any

from inspector.processing import rule_regex
from inspector.processing.context import ProcessingContext, ProcessingError

#: Parameters whose strings are formatted from the data and the node before the action runs.
FORMATTED_PARAMS = ("value", "message")
#: Largest width or precision a format spec may ask for: `{data[x]:>999999999}` would
#: otherwise build a string of that size.
MAX_FORMAT_WIDTH = 1024

#: The names a reference starts from; run() gets a source for each.
NAMES = ("data", "node")
#: str.format's conversions (`!r`, `!s`, `!a`).
CONVERSIONS = ("r", "s", "a")

_FIELD = re.compile(r"(?P<name>\w+)(?P<keys>(?:\[[^\[\]]*\])*)")
_KEY = re.compile(r"\[([^\[\]]*)\]")
_MISSING = object()


def _parse_field(field_name: str) -> tuple[str, list[str]]:
    """(name, keys) of a reference `name[key]...`; ProcessingError for anything else:
    attribute access, or a name other than data and node."""
    if not field_name:
        raise ProcessingError("{}: a field needs a name, use data or node")
    match = _FIELD.fullmatch(field_name)
    if match is None:
        raise ProcessingError(
            f"{{{field_name}}}: only item lookup such as {{data[key]}} is allowed"
        )
    name = match["name"]
    if name not in NAMES:
        raise ProcessingError(f"{{{field_name}}}: unknown name {name!r}, use data or node")
    return name, _KEY.findall(match["keys"])


def _check_spec(field_name: str | None, format_spec: str) -> None:
    # A format spec is the rule's own text, never data: `{data[x]:{data}}` would expand
    # the data into the spec, and an error about the spec would quote it.
    if "{" in format_spec:
        raise ProcessingError(f"{{{field_name}}}: a format spec cannot hold a replacement field")
    if any(int(number) > MAX_FORMAT_WIDTH for number in re.findall(r"\d+", format_spec)):
        raise ProcessingError(f"format spec {format_spec!r} is too wide")


class _ItemFormatter(string.Formatter):
    """str.format with item lookup only: `{data[a][0]}`, never `{data.attr}`, so a rule
    author cannot walk from the data to Python objects."""

    def __init__(self, sources: dict[str, Any]) -> None:
        super().__init__()
        self._sources = sources

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, str]:
        name, keys = _parse_field(field_name)
        if name not in self._sources:
            raise ProcessingError(f"{{{field_name}}}: unknown name {name!r}, use data or node")
        value = self._sources[name]
        for key in keys:
            value = _item(value, key, field_name)
        return value, name

    def parse(self, format_string: str) -> Any:
        for literal, field_name, format_spec, conversion in super().parse(format_string):
            if format_spec:
                _check_spec(field_name, format_spec)
            yield literal, field_name, format_spec, conversion

    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_spec("", format_spec)
        return super().format_field(value, format_spec)


def check_formats(value: Any) -> None:
    """Refuse, as formatting would whatever the data, every string in value (list items,
    dict keys and values) that can never be formatted safely: broken braces, attribute
    access, a name other than data and node, a positional field, an unknown conversion,
    a replacement field inside a format spec, a width over MAX_FORMAT_WIDTH.

    Raises ProcessingError naming the reference. What depends on the data (a missing
    key, a spec the value's type refuses) is left to formatting.
    """
    if isinstance(value, str):
        try:
            fields = list(string.Formatter().parse(value))
        except ValueError as exc:
            raise ProcessingError(f"cannot format {rule_regex.shown(value)}: {exc}") from exc
        for _literal, field_name, format_spec, conversion in fields:
            if field_name is None:
                continue
            _parse_field(field_name)
            if conversion is not None and conversion not in CONVERSIONS:
                raise ProcessingError(
                    f"{{{field_name}}}: unknown conversion {conversion!r}, use r, s or a"
                )
            if format_spec:
                _check_spec(field_name, format_spec)
    elif isinstance(value, list):
        for item in value:
            check_formats(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_formats(key)
            check_formats(item)


def _item(container: Any, key: str, field_name: str) -> Any:
    if isinstance(container, dict):
        if key in container:
            return container[key]
        raise ProcessingError(f"{{{field_name}}}: no key {key!r}")
    if isinstance(container, list):
        if key.isdigit() and int(key) < len(container):
            return container[int(key)]
        raise ProcessingError(f"{{{field_name}}}: no index {key!r} in a list of {len(container)}")
    kind = type(container).__name__
    raise ProcessingError(f"{{{field_name}}}: cannot look up {key!r} in a {kind}")


def render(value: Any, sources: dict[str, Any]) -> Any:
    """The value with every string in it (list items, dict keys and values) formatted."""
    if isinstance(value, str):
        try:
            return _ItemFormatter(sources).vformat(value, (), {})
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise ProcessingError(f"cannot format {value!r}: {exc}") from exc
    if isinstance(value, list):
        return [render(item, sources) for item in value]
    if isinstance(value, dict):
        return {render(key, sources): render(item, sources) for key, item in value.items()}
    return value


def _pointer(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path.strip("/").split("/")]


def _lookup(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            return _MISSING
    return doc


def _apply_op(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """One JSON patch operation on doc, leniently: an operation that cannot apply is skipped
    (Ironic will be the judge of it)."""
    parts = _pointer(op["path"])
    parent, key = _lookup(doc, parts[:-1]), parts[-1]
    value = copy.deepcopy(op.get("value"))
    if isinstance(parent, dict):
        if op["op"] == "remove":
            parent.pop(key, None)
        else:
            parent[key] = value
    elif isinstance(parent, list):
        if key == "-" and op["op"] == "add":
            parent.append(value)
        elif key.isdigit() and op["op"] == "add" and int(key) <= len(parent):
            parent.insert(int(key), value)
        elif key.isdigit() and int(key) < len(parent):
            if op["op"] == "remove":
                del parent[int(key)]
            else:
                parent[int(key)] = value


def _current(context: ProcessingContext, node_doc: dict[str, Any], path: str) -> Any:
    """The value at path once the changes recorded so far are applied to the node, in the
    order the processing task sends them (properties first, then the patch)."""
    doc = copy.deepcopy(node_doc)
    for name, value in context.changes.properties.items():
        _apply_op(doc, {"op": "add", "path": f"/properties/{name}", "value": value})
    for op in context.changes.patch:
        _apply_op(doc, op)
    return _lookup(doc, _pointer(path))


def _fail(params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]) -> None:
    raise ProcessingError(str(params["message"]))


def _set_attribute(
    params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    path = "/" + params["path"].strip("/")
    context.changes.patch.append({"op": "add", "path": path, "value": params["value"]})
    # As ironic-inspector: changing the driver resets its interfaces unless told not to.
    if params.get("reset_interfaces", path == "/driver"):
        context.changes.reset_interfaces = True


def _set_capability(
    params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    # No value means "remove the capability", as ironic-inspector had it.
    value = params.get("value")
    capabilities: dict[str, Any] = context.changes.capabilities
    capabilities[params["name"]] = None if value is None else str(value)


def _extend_attribute(
    params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    path = "/" + params["path"].strip("/")
    current = _current(context, node_doc, path)
    if current is _MISSING or current is None:
        current = []
    if not isinstance(current, list):
        raise ProcessingError(f"cannot extend {path}: it holds a {type(current).__name__}")
    value = params["value"]
    if params.get("unique") and value in current:
        return
    context.changes.patch.append({"op": "add", "path": path, "value": [*current, value]})


def _add_trait(
    params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    # The later of an add and a remove of the same trait wins.
    context.changes.traits_remove.discard(params["name"])
    context.changes.traits_add.add(params["name"])


def _remove_trait(
    params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    context.changes.traits_add.discard(params["name"])
    context.changes.traits_remove.add(params["name"])


Action = Callable[[dict[str, Any], ProcessingContext, dict[str, Any]], None]

#: Action name -> what records it.
ACTIONS: dict[str, Action] = {
    "fail": _fail,
    "set-attribute": _set_attribute,
    "set-capability": _set_capability,
    "extend-attribute": _extend_attribute,
    "add-trait": _add_trait,
    "remove-trait": _remove_trait,
}


def formatted(action: dict[str, Any], sources: dict[str, Any]) -> dict[str, Any]:
    """The action's parameters, those of FORMATTED_PARAMS formatted from sources
    ({"data", "node"}), as the action will get them."""
    return {
        key: render(value, sources) if key in FORMATTED_PARAMS else value
        for key, value in action.items()
        if key != "action"
    }


def run(action: dict[str, Any], context: ProcessingContext, sources: dict[str, Any]) -> None:
    """Format the action's values from sources ({"data", "node"}) and record the action."""
    record(action.get("action"), formatted(action, sources), context, sources["node"])


def record(
    name: Any, params: dict[str, Any], context: ProcessingContext, node_doc: dict[str, Any]
) -> None:
    """Record the action `name` with its formatted params into context.changes."""
    handler = ACTIONS.get(name)
    if handler is None:
        raise ProcessingError(f"unknown action {name!r}")
    handler(params, context, node_doc)
