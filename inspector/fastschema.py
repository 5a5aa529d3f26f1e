"""A plain-Python predicate equivalent to a JSON Schema that only uses type, properties
and items: valid or not, without jsonschema's walk (which words the errors instead)."""

from collections.abc import Callable
from typing import Any

#: JSON Schema types the fast check knows, as Python types (bool is no integer here).
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "null": (type(None),),
    "boolean": (bool,),
}
#: Keywords the fast check knows; a schema using another one has no fast check.
_FAST_KEYWORDS = {"type", "properties", "items"}

Check = Callable[[Any], bool]


def fast_check(schema: dict) -> Check | None:
    """A plain-Python predicate equivalent to `schema`, for schemas that only use
    type (of the types above), properties and items; None for any other schema.

    A ramdisk payload is large and mostly not ours to check: walking it with jsonschema
    costs more than finding its node. The predicate only decides valid or not; the
    message of an invalid body still comes from jsonschema.
    """
    if not isinstance(schema, dict) or set(schema) - _FAST_KEYWORDS:
        return None
    names = _names(schema.get("type"))
    if names is not None and not all(name in _TYPES for name in names):
        return None
    allowed = None if names is None else tuple(t for name in names for t in _TYPES[name])
    properties: dict[str, Check] = {}
    for name, sub_schema in schema.get("properties", {}).items():
        sub = fast_check(sub_schema)
        if sub is None:
            return None
        properties[name] = sub
    items = fast_check(schema["items"]) if "items" in schema else None
    if "items" in schema and items is None:
        return None
    # Items with a type and nothing else (say a list of strings): their exact types
    # looked up in C first; the predicate itself decides only when that says no.
    item_schema = schema.get("items")
    item_types = (
        frozenset(t for name in _names(item_schema["type"]) or () for t in _TYPES[name])
        if isinstance(item_schema, dict) and set(item_schema) == {"type"}
        else None
    )

    def check(value: Any) -> bool:
        if allowed is not None and not isinstance(value, allowed):
            return False
        if properties and isinstance(value, dict):
            for name, sub in properties.items():
                if name in value and not sub(value[name]):
                    return False
        if items is not None and isinstance(value, list):
            if item_types is not None and all(map(item_types.__contains__, map(type, value))):
                return True
            return all(map(items, value))
        return True

    return check


def _names(types: Any) -> list[str] | None:
    return [types] if isinstance(types, str) else types
