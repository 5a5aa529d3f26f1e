"""JSON Schemas of the request bodies, and their validation into 400s that say what is
wrong and where. Shape only: the meaning (known rule operators, lookups) is checked by
the code that uses the body."""

from typing import Any

import jsonschema
from jsonschema import validators

from inspector import redaction
from inspector.errors import BadRequest
from inspector.fastschema import fast_check
from inspector.processing import payload

_STRING_OR_NULL = {"type": ["string", "null"]}

#: POST /v1/introspection/{node}: Ironic 2025.2 sends {"uuid": ...}.
START = {
    "type": "object",
    "properties": {"uuid": {"type": "string"}},
}

#: POST /v1/continue: the type of every field the hooks and the worker read; the rest is
#: the ramdisk's. inspector.processing.payload owns it: /v1/continue and processing check
#: a payload with payload.refusal (this predicate, then its [limits]).
CONTINUE = payload.SCHEMA

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

#: POST /v1/rules/check (1.19): rules (each then checked as RULE) or stored rule uuids,
#: and one node or several (uuid or name).
RULES_CHECK = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "rules": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "uuids": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "node": {"type": "string", "minLength": 1},
        "nodes": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    },
}

_VALIDATORS = {
    id(schema): (validators.validator_for(schema)(schema), fast_check(schema))
    for schema in (START, CONTINUE, REAPPLY, RULE, RULES_CHECK)
}


def validate(body: Any, schema: dict, what: str) -> Any:
    """`body` when it matches `schema`; otherwise 400 naming the first problem's place."""
    validator, check = _VALIDATORS[id(schema)]
    if check is not None and check(body):
        return body
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is None:
        return body
    path = error.absolute_path
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    heading = f"Invalid {what}"
    if what == "rule" and path and path[0] in ("conditions", "actions"):
        heading = f"Validation failed for {path[0]}"  # ironic-inspector's rules.py words
    raise BadRequest(f"{heading}: {('body' + where) if where else 'body'}: {_problem(error)}")


#: Characters of a refused value that a 400 may quote; a longer one is named by its type.
MAX_QUOTED_VALUE = 40


def _problem(error: jsonschema.ValidationError) -> str:
    """jsonschema's words for the error (a 400's message may reach a log), the refused
    value named instead of quoted when it is long or under a credential's key, masked
    and cut to redaction.MAX_QUOTED characters."""
    text, quoted, value = error.message, repr(error.instance), error.instance
    secret = any(isinstance(p, str) and redaction.is_secret_key(p) for p in error.absolute_path)
    if (len(quoted) > MAX_QUOTED_VALUE or secret) and quoted in text:
        kinds = ((str, "a string"), (dict, "an object"), (list, "a list"))
        named = next(
            (f"{name} of length {len(value)}" for cls, name in kinds if isinstance(value, cls)),
            f"a {type(value).__name__}",
        )
        text = text.replace(quoted, named)
    return redaction.shorten(text)
