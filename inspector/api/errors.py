"""Error mapping: the one place where exceptions become HTTP answers ({"error": {"message"}},
with Retry-After on a rate limit's 429 and on a backend's 503): Flask's handlers, and
`Shield` for the WSGI middleware outside Flask (keystonemiddleware's auth_token).

Our own errors answered with a 5xx are logged as one line; unexpected exceptions with
their stack."""

import http as http_status
import json
import logging
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import flask
from werkzeug import exceptions as http
from werkzeug.datastructures import EnvironHeaders

from inspector import redaction
from inspector.api import request_ids
from inspector.api.guard import RateLimited
from inspector.errors import InspectorError, ServiceUnavailable

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

LOG = logging.getLogger(__name__)

GENERIC_MESSAGE = "An internal error occurred; see the service log for details."
#: A Content-Length that is no number, whichever of the server and inspector.api.bodies
#: tells.
INVALID_LENGTH = "Invalid Content-Length header"
#: Seconds a client is asked to wait before it sends again a request answered 503
#: because a backend could not be reached in time: about what a backend's blip lasts,
#: and shorter than ironic-python-agent's own waits between attempts.
SERVICE_RETRY_AFTER = 2


def error_response(message: str, status: int) -> flask.Response:
    response = flask.jsonify({"error": {"message": message}})
    response.status_code = status
    return response


def _on_inspector_error(exc: InspectorError) -> flask.Response:
    if exc.http_status >= 500:  # our own error: one line (a stack with debug on)
        LOG.error(
            "Request %s %s (req %s) failed: %s",
            flask.request.method,
            flask.request.path,
            request_ids.incoming(flask.request.headers) or "-",
            redaction.shorten(exc.message),
            exc_info=LOG.isEnabledFor(logging.DEBUG),
        )
    response = error_response(exc.message, exc.http_status)
    if isinstance(exc, RateLimited):
        response.headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, ServiceUnavailable) and exc.http_status == 503:
        response.headers["Retry-After"] = str(SERVICE_RETRY_AFTER)
    return response


def _on_http_error(exc: http.HTTPException) -> flask.Response:
    status = exc.code or 500
    message = exc.description or exc.name
    if status == 404 and isinstance(exc, http.NotFound) and not exc.description:
        message = "Not found"
    response = error_response(message, status)
    if isinstance(exc, http.MethodNotAllowed) and exc.valid_methods:
        response.headers["Allow"] = ", ".join(exc.valid_methods)
    return response


def _on_unexpected(exc: Exception) -> flask.Response:
    LOG.exception(
        "Unexpected error in %s %s (req %s)",
        flask.request.method,
        flask.request.path,
        request_ids.incoming(flask.request.headers) or "-",
    )
    debug = flask.current_app.config.get("INSPECTOR_DEBUG", False)
    return error_response(str(exc) if debug else GENERIC_MESSAGE, 500)


def register(app: flask.Flask) -> None:
    app.register_error_handler(InspectorError, _on_inspector_error)
    app.register_error_handler(http.HTTPException, _on_http_error)
    app.register_error_handler(Exception, _on_unexpected)


def plain_answer(status: int, message: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """An error answer in the API's format outside Flask: WSGI status line, headers, body."""
    body = json.dumps({"error": {"message": message}}).encode()
    line = f"{status} {http_status.HTTPStatus(status).phrase}"
    return line, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))], body


class Shield:
    """WSGI middleware: an exception of the application it wraps (a middleware outside
    Flask, whose handlers never see it) is answered `status` with `message` in the API's
    format, and logged as one line naming `what` failed (its stack at debug level),
    instead of the server's empty 500."""

    def __init__(self, app: WSGIApplication, status: int, message: str, what: str) -> None:
        self.app = app
        self.status = status
        self.message = message
        self.what = what

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        started = []

        def start(
            status: str, headers: list[tuple[str, str]], exc_info: "OptExcInfo | None" = None
        ) -> Callable[[bytes], object]:
            started.append(status)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, start)
        except Exception as exc:
            LOG.error(
                "Request %s %s (req %s) failed in %s: %s: %s",
                environ.get("REQUEST_METHOD"),
                environ.get("PATH_INFO"),
                request_ids.incoming(EnvironHeaders(environ)) or "-",
                self.what,
                type(exc).__name__,
                redaction.shorten(str(exc)),
                exc_info=LOG.isEnabledFor(logging.DEBUG),
            )
            line, headers, body = plain_answer(self.status, self.message)
            # With exc_info only when the app had started its answer: the server then
            # replaces it, or raises again when it was already sent.
            start_response(line, headers, sys.exc_info() if started else None)
            return [body]
