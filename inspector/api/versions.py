"""API microversions: parsing the request's version headers and stamping min/max on every answer."""

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import flask
from werkzeug.datastructures import Headers

from inspector.errors import BadRequest, NotAcceptable, NotFound

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

#: Oldest and newest API versions served: ironic-inspector's 1.0 to 1.18, then
#: Inspector's own extensions from 1.19 on (docs/api.md lists what each adds).
MINIMUM = (1, 0)
MAXIMUM = (1, 19)
#: The version of a request that names none: ironic-inspector's newest, so an
#: unversioned call answers exactly as ironic-inspector 12.5's did.
DEFAULT = (1, 18)
#: Inspector's first own version: history and drift, the rules check, the fleet report.
HISTORY = (1, 19)

VERSION_HEADER = "X-OpenStack-Ironic-Inspector-API-Version"
STANDARD_HEADER = "OpenStack-API-Version"
SERVICE_TYPE = "baremetal-introspection"
MIN_HEADER = "X-OpenStack-Ironic-Inspector-API-Minimum-Version"
MAX_HEADER = "X-OpenStack-Ironic-Inspector-API-Maximum-Version"

_VERSION = re.compile(r"([0-9]+)\.([0-9]+)")
#: The longest version header value looked at; longer ones are malformed.
MAX_VERSION_LENGTH = 32
#: ironic-inspector's main._get_version: clients match on its words.
MALFORMED = "Malformed API version: expected string in form of X.Y or latest"
#: Digits of a version part; a longer number is no version we serve (406).
MAX_PART_DIGITS = 6


def format_version(version: tuple[int, int]) -> str:
    return "{}.{}".format(*version)


def parse(text: str) -> tuple[int, int]:
    """'1.12' -> (1, 12); 'latest' -> MAXIMUM. BadRequest or NotAcceptable otherwise."""
    text = text.strip()
    match = _VERSION.fullmatch(text) if len(text) <= MAX_VERSION_LENGTH else None
    if text.lower() == "latest":
        return MAXIMUM
    if not match:
        raise BadRequest(MALFORMED)
    if max(len(match[1]), len(match[2])) > MAX_PART_DIGITS:
        version = (MAXIMUM[0] + 1, 0)  # beyond any version served: refused below
        shown = text
    else:
        version = (int(match[1]), int(match[2]))
        shown = format_version(version)
    if not MINIMUM <= version <= MAXIMUM:
        # ironic-inspector's main.check_api_version, word for word
        raise NotAcceptable(
            f"Unsupported API version {shown}, supported range is "
            f"{format_version(MINIMUM)} to {format_version(MAXIMUM)}"
        )
    return version


def _standard_header_value(value: str) -> str | None:
    """The version for our service type in `OpenStack-API-Version`, if it names it."""
    for item in value.split(","):
        service, _, version = item.strip().partition(" ")
        if service.lower() == SERVICE_TYPE:
            return version
    return None


def requested(headers: Headers | Mapping[str, str]) -> tuple[int, int]:
    """The version the request asks for; no header means DEFAULT."""
    value = headers.get(VERSION_HEADER)
    if value is None and STANDARD_HEADER in headers:
        value = _standard_header_value(headers[STANDARD_HEADER])
    return DEFAULT if value is None else parse(value)


def negotiate() -> None:
    """before_request hook: store the requested version on flask.g (for the views) and
    in the environ (for `Stamp`)."""
    request = flask.request
    flask.g.api_version = request.environ[ENVIRON_KEY] = requested(request.headers)


#: The headers every answer carries, and those naming each version: built once.
_RANGE_HEADERS = ((MIN_HEADER, format_version(MINIMUM)), (MAX_HEADER, format_version(MAXIMUM)))
_VERSION_HEADERS = {
    (MINIMUM[0], minor): (
        (VERSION_HEADER, format_version((MINIMUM[0], minor))),
        (STANDARD_HEADER, f"{SERVICE_TYPE} {format_version((MINIMUM[0], minor))}"),
    )
    for minor in range(MINIMUM[1], MAXIMUM[1] + 1)
}
#: Where `negotiate` leaves the version for `Stamp`, in the WSGI environ.
ENVIRON_KEY = "inspector.api_version"


def stamped(headers: list[tuple[str, str]], version: tuple[int, int] | None) -> None:
    """Add the range, the version served (when negotiated) and Vary to a WSGI header
    list, in place."""
    headers.extend(_RANGE_HEADERS)
    if version is not None:
        headers.extend(_VERSION_HEADERS[version])
    for index, (name, value) in enumerate(headers):
        if name.lower() == "vary":
            headers[index] = (name, f"{value}, {VERSION_HEADER}")
            return
    headers.append(("Vary", VERSION_HEADER))


class Stamp:
    """WSGI middleware: every answer, errors included, names the supported range.

    On the WSGI header list rather than in an after_request hook: werkzeug's Headers
    check and copy each value, which costs more than the rest of a status read's
    headers together."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        def start(
            status: str, headers: list[tuple[str, str]], exc_info: "OptExcInfo | None" = None
        ) -> Callable[[bytes], object]:
            stamped(headers, environ.get(ENVIRON_KEY))
            if exc_info is None:
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        return self.app(environ, start)


def require(minimum: tuple[int, int], what: str) -> None:
    """404 for a feature newer than the version the client asked for."""
    version = flask.g.get("api_version", DEFAULT)
    if version < minimum:
        raise NotFound(
            f"{what} needs API version {format_version(minimum)} or newer; "
            f"the request asked for {format_version(version)}"
        )
