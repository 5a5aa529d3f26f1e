"""The ids of an API request, and the log context they make (inspector.request_context).

* Its own id: oslo.middleware's `req-<uuid>` (`openstack.request_id` in the environ),
  new for every request, sent back in X-OpenStack-Request-Id.
* Its global request id, passed on to Ironic and, with the queued request, to the
  worker: the client's X-OpenStack-Request-ID when it is one (`req-<uuid>`, as
  oslo.middleware honours it: `openstack.global_request_id`); else HAProxy's
  X-Request-ID as `req-<uuid>` (the same on each of its retries of one request); else
  the request's own id.
* The id a request that changes a node is recorded under (`incoming`): the one the
  proxy or the client sent (X-Request-ID, then X-OpenStack-Request-ID), when it is
  well-formed; else the request's own id. HAProxy sets X-Request-ID on every request it
  passes (etc/inspector/haproxy.cfg), the same on each of its retries of one request: an
  attempt sent again is recognised by it (intents.arrive). An id that is not
  well-formed is ignored, as a request without any; it is never an error.

Every log line of the request shows the global and the own id (oslo.log's
`[global_request_id request_id user project ...]`), the caller once authenticated, and
the node once it is known.
"""

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import flask
from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_middleware import request_id as oslo_request_id
from werkzeug.datastructures import Headers

from inspector import request_context

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

#: The headers read, in this order: the proxy's (it replaces whatever the client sent),
#: then the client's own (keystoneauth's global request id: "req-" and a UUID).
HEADERS = ("X-Request-ID", "X-OpenStack-Request-ID")
#: Letters, digits, '-', '_' and ':', 16 to 40 of them: a UUID, with or without "req-".
#: No '.' (follow-up requests are "<id>.<event>"), nothing a log line or a database
#: key could be confused by, and at most the 40 characters a follow-up id keeps.
WELL_FORMED = re.compile(r"[A-Za-z0-9_:-]{16,40}")
#: The header of every answer naming the request's own id (oslo.middleware's).
ANSWER_HEADER = "X-OpenStack-Request-Id"
#: Where a UUID (HAProxy's `uuid()`) becomes a global request id.
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
#: WSGI environ keys of the headers read.
_PROXY_KEY = "HTTP_X_REQUEST_ID"
_CLIENT_KEY = "HTTP_X_OPENSTACK_REQUEST_ID"
#: What a log line may say of the caller (oslo.log's logging_user_identity_format and
#: the JSON context): the request context's fields copied from the authenticated one.
CALLER_FIELDS = (
    "user_id",
    "project_id",
    "domain_id",
    "system_scope",
    "user_domain_id",
    "project_domain_id",
    "user_name",
    "project_name",
    "domain_name",
    "user_domain_name",
    "project_domain_name",
)


def incoming(headers: Headers | Mapping[str, str]) -> str | None:
    """The first well-formed id of HEADERS; None when there is none."""
    for name in HEADERS:
        value = headers.get(name)
        if value is not None and WELL_FORMED.fullmatch(value.strip()):
            return value.strip()
    return None


def global_id(environ: Mapping[str, str]) -> str | None:
    """The global request id the request came with: the client's, else the proxy's UUID
    as `req-<uuid>`; None when it came with neither."""
    client = environ.get(_CLIENT_KEY, "").strip()
    if request_context.is_global_id(client):
        return client
    proxy = environ.get(_PROXY_KEY, "").strip()
    if _UUID.fullmatch(proxy):
        return f"req-{proxy.lower()}"
    return None


class RequestId(oslo_request_id.RequestId):
    """oslo.middleware's RequestId on plain WSGI (its WebOb request and response cost
    18 us a request, a twentieth of a status read): the request's own id in the environ
    and in every answer, the global one in the environ; and the request's log context
    bound while the application runs."""

    #: Always given here (oslo.middleware's base allows None).
    application: WSGIApplication

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        own = oslo_context.generate_request_id()
        environ[oslo_request_id.ENV_REQUEST_ID] = own
        passed_on = global_id(environ)
        if passed_on is not None:
            environ[oslo_request_id.GLOBAL_REQ_ID] = passed_on
        names = [ANSWER_HEADER, *self.compat_headers]

        def start(
            status: str, headers: list[tuple[str, str]], exc_info: "OptExcInfo | None" = None
        ) -> Callable[[bytes], object]:
            present = {name.lower() for name, _ in headers}
            headers.extend((name, own) for name in names if name.lower() not in present)
            if exc_info is None:
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        context = request_context.Context(request_id=own, global_request_id=passed_on or own)
        with request_context.bound(context):
            return self.application(environ, start)


def install(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """app (a WSGI callable) behind RequestId: outside everything else, so that every
    answer, a refusal by authentication or the body limits too, names the request."""
    return RequestId(app, conf)


def name_node() -> None:
    """before_request hook: the node the route names by UUID in the request's log
    context (a view names a node it resolves by name itself)."""
    context = request_context.current()
    node = (flask.request.view_args or {}).get("node_id")
    if context is not None and node is not None and len(node) == 36:
        try:
            context.resource_uuid = str(uuid.UUID(node))
        except ValueError:
            pass


def name_caller() -> None:
    """before_request hook, after authentication's: the caller it found (flask.g.context,
    see inspector.api.auth) in the request's log context."""
    context = request_context.current()
    caller = flask.g.get("context")
    if context is not None and caller is not None:
        for field in CALLER_FIELDS:
            setattr(context, field, getattr(caller, field, None))
