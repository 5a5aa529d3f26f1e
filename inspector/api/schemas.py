"""JSON Schemas of the request bodies, and their validation into 400s that say what is
wrong and where. Shape only: the meaning (known rule operators, lookups) is checked by
the code that uses the body."""

from collections.abc import Callable
from typing import Any

import jsonschema
from jsonschema import validators

from inspector.errors import BadRequest

_STRING_OR_NULL = {"type": ["string", "null"]}

#: POST /v1/introspection/{node}: Ironic 2025.2 sends {"uuid": ...}.
START = {
    "type": "object",
    "properties": {"uuid": {"type": "string"}},
}

#: POST /v1/continue: what lookup needs to be well-formed; the rest is the ramdisk's.
CONTINUE = {
    "type": "object",
    "properties": {
        "inventory": {
            "type": "object",
            "properties": {
                "interfaces": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"mac_address": _STRING_OR_NULL, "name": _STRING_OR_NULL},
                    },
                },
                "bmc_address": _STRING_OR_NULL,
                "bmc_v6address": _STRING_OR_NULL,
            },
        },
        "boot_interface": _STRING_OR_NULL,
        "error": _STRING_OR_NULL,
        "logs": _STRING_OR_NULL,
    },
}

#: POST /v1/introspection/{node}/data/unprocessed (1.15): new raw data.
REAPPLY = {"type": "object", "minProperties": 1}

#: POST /v1/rules.
RULE = {
    "type": "object",
    "required": ["actions"],
    "additionalProperties": False,
    "properties": {
        "uuid": _STRING_OR_NULL,
        "description": _STRING_OR_NULL,
        "scope": _STRING_OR_NULL,
        "conditions": {
            "type": ["array", "null"],
            "items": {
                "type": "object",
                "required": ["op", "field"],
                "properties": {
                    "op": {"type": "string"},
                    "field": {"type": "string", "minLength": 1},
                    "multiple": {"type": "string"},
                    "invert": {"type": "boolean"},
                },
            },
        },
        "actions": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["action"],
                "properties": {"action": {"type": "string"}},
            },
        },
    },
}

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
    types = schema.get("type")
    names = [types] if isinstance(types, str) else types
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

    def check(value: Any) -> bool:
        if allowed is not None and not isinstance(value, allowed):
            return False
        if properties and isinstance(value, dict):
            for name, sub in properties.items():
                if name in value and not sub(value[name]):
                    return False
        if items is not None and isinstance(value, list):
            return all(map(items, value))
        return True

    return check


_VALIDATORS = {
    id(schema): (validators.validator_for(schema)(schema), fast_check(schema))
    for schema in (START, CONTINUE, REAPPLY, RULE)
}


def validate(body: Any, schema: dict, what: str) -> Any:
    """`body` when it matches `schema`; otherwise 400 naming the first problem's place."""
    validator, check = _VALIDATORS[id(schema)]
    if check is not None and check(body):
        return body
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is None:
        return body
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    raise BadRequest(f"Invalid {what}: {('body' + where) if where else 'body'}: {error.message}")
