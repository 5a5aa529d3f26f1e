"""Parsing of path and query parameters: UUIDs, node names, booleans, paging, states.

Everything a client can get wrong becomes a BadRequest naming the parameter, in
ironic-inspector 12.5's words where it refused the same (api_tools, main).
"""

import json
import math
import re
from typing import Any, Literal, NoReturn, overload

import flask

from inspector.errors import BadRequest
from inspector.machine import State

#: Ironic's node names: RFC 3986 unreserved characters (fullmatch: the whole value).
_NAME = re.compile(r"[A-Za-z0-9\-._~]{1,255}")
#: What str(uuid.UUID(value)) gives back, but in either case; fullmatch: no newline.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_TRUE = {"1", "t", "true", "on", "y", "yes"}
#: Deepest nesting a JSON body may have.
MAX_DEPTH = 100
_FALSE = {"0", "f", "false", "off", "n", "no"}
#: The introspection states a listing may filter on.
STATE_NAMES = frozenset(state.value for state in State)
#: A JSON escape of a UTF-16 surrogate, and a surrogate left in a decoded string (a
#: pair of escapes decodes to one character: only a lone one stays a surrogate).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_uuid(value: str) -> bool:
    """A UUID in its canonical hyphenated form, in either case."""
    return _UUID.fullmatch(value) is not None


def node_ident(value: str) -> str:
    """A node UUID (normalised) or an Ironic node name."""
    if is_uuid(value):
        return value.lower()
    if not _NAME.fullmatch(value):
        raise BadRequest(f"Invalid node UUID or name: {value!r}")
    return value


def rule_uuid(value: str) -> str:
    if not is_uuid(value):
        raise BadRequest(f"Invalid rule UUID: {value!r}")
    return value.lower()


def only(*allowed: str) -> None:
    """Refuse query parameters the route does not know."""
    if not flask.request.query_string:
        return
    unknown = sorted(set(flask.request.args) - set(allowed))
    if unknown:
        raise BadRequest(f"Unknown query parameter(s): {', '.join(unknown)}")


def boolean(name: str, default: bool) -> bool:
    value = flask.request.args.get(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise BadRequest(f"Invalid boolean value for {name}: {value}")


def limit(maximum: int) -> int:
    value = flask.request.args.get("limit")
    if value is None:
        return maximum
    try:
        number = int(value)
    except ValueError as exc:
        raise BadRequest(f"Bad request: {exc}") from None
    if number < 0:
        raise BadRequest("Bad request: Limit cannot be negative")
    if number > maximum:
        raise BadRequest(f"Bad request: Limit over {maximum}")
    return number or maximum


def marker() -> str | None:
    value = flask.request.args.get("marker")
    if value is not None and not is_uuid(value):
        raise BadRequest("Bad request: Marker not UUID-like")
    return value.lower() if value else None


def states() -> list[str]:
    values = [v for item in flask.request.args.getlist("state") for v in item.split(",") if v]
    invalid = [value for value in values if value not in STATE_NAMES]
    if invalid:
        raise BadRequest(f'Bad request: State(s) "{", ".join(invalid)}" are not valid')
    return values


@overload
def json_object(*, required: Literal[True] = True) -> dict[str, Any]: ...
@overload
def json_object(*, required: bool) -> dict[str, Any] | None: ...
def json_object(*, required: bool = True) -> dict[str, Any] | None:
    """The body as a JSON object, whatever its content type (as ironic-inspector).

    Stricter than json.loads: NaN, Infinity and numbers too large for a float are
    refused (they cannot be written back as JSON), and so are NUL characters and lone
    surrogates in strings (databases refuse the first, UTF-8 cannot carry the second),
    invalid UTF-8 and nesting deeper than MAX_DEPTH.
    """
    raw = flask.request.get_data(cache=True)
    if not raw.strip():
        if required:
            raise BadRequest("A JSON object body is required")
        return None
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_refuse, parse_float=_finite)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"Malformed JSON body: {exc}") from None
    except RecursionError:  # the parser's own recursion, far past MAX_DEPTH
        raise BadRequest(f"The body is nested deeper than {MAX_DEPTH} levels") from None
    if not isinstance(body, dict):
        raise BadRequest(f"Invalid data: expected a JSON object, got {type(body).__name__}")
    if _may_need_checking(raw):
        _check_strings(body)
    return body


def _may_need_checking(raw: bytes) -> bool:
    """Whether the body may hold a NUL, a lone surrogate or nest too deeply; a cheap look
    at the text that spares walking a large ramdisk payload. The parser refuses a raw
    NUL byte, so a decoded NUL comes from a \\u0000 escape; a surrogate can only come
    from a \\uD800-\\uDFFF escape (valid UTF-8 holds none); nesting needs a bracket
    per level."""
    return (
        b"\\u0000" in raw
        or _SURROGATE_ESCAPE.search(raw) is not None
        or raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    )


def _refuse(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is too large a number")
    return value


def _check_strings(value: object, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise BadRequest("The body is nested too deeply")
    if isinstance(value, str):
        if "\x00" in value:
            raise BadRequest("Strings in the body must not contain NUL characters")
        if _SURROGATE.search(value):
            raise BadRequest(
                "Strings in the body must not contain lone surrogates (\\uD800-\\uDFFF)"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, depth + 1)
            _check_strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, depth + 1)
