"""JSON Schemas of the request bodies, and their validation into 400s that say what is
wrong and where. Shape only: the meaning (known rule operators, lookups) is checked by
the code that uses the body."""

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

_VALIDATORS = {
    id(schema): validators.validator_for(schema)(schema)
    for schema in (START, CONTINUE, REAPPLY, RULE)
}


def validate(body: Any, schema: dict, what: str) -> Any:
    """`body` when it matches `schema`; otherwise 400 naming the first problem's place."""
    error = jsonschema.exceptions.best_match(_VALIDATORS[id(schema)].iter_errors(body))
    if error is None:
        return body
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    raise BadRequest(f"Invalid {what}: {('body' + where) if where else 'body'}: {error.message}")
