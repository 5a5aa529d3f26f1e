"""Ironic's REST API as plain requests on our connection (inspector.ironic.connection).

Owns the paths and the decoding of each request: one HTTP request a call, JSON in and
out, Ironic's errors raised as failures.HttpError with Ironic's own message for
inspector.ironic.failures to judge. It never retries, and builds no resource objects.
"""

import json
import urllib.parse
from typing import Any, Protocol

from inspector.ironic.failures import BadReply, HttpError

#: What Ironic says (with a 404, as for a node it has not) to the removal of a trait the
#: node does not have: "Node <uuid> doesn't have a trait '<trait>'".
MISSING_TRAIT = "have a trait"
#: Characters of a body that is not Ironic's error format quoted in an error.
QUOTED = 200


class Sender(Protocol):
    """What sends a request: inspector.ironic.connection.Connection, or a test's fake."""

    def send(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any: ...


def node(ident: str, *parts: str) -> str:
    """The path of a node (by UUID or name), or of one of its sub-resources."""
    return _path("nodes", ident, *parts)


def port(port_uuid: str) -> str:
    return _path("ports", port_uuid)


def send(
    sender: Sender, method: str, path: str, body: Any = None, *, params: dict | None = None
) -> Any:
    """Ironic's decoded JSON answer (None when it sent no body); HttpError for an error
    status, BadReply for a success that is not JSON."""
    reply = sender.send(method, path, body, params)
    if reply.status >= 400:
        raise HttpError(reply.status, message(reply.body), reply.request_id)
    if not reply.body:
        return None
    try:
        return json.loads(reply.body)
    except ValueError as exc:
        raise BadReply(
            f"Ironic answered HTTP {reply.status} with no JSON: {reply.body[:QUOTED]!r}"
        ) from exc


def message(body: bytes) -> str:
    """Ironic's message in an error body: the faultstring of the JSON document inside
    its error_message, or the body itself when it is something else (a proxy's page)."""
    try:
        document = json.loads(body)
    except ValueError:
        return body[:QUOTED].decode(errors="replace").strip() or "no message"
    if isinstance(document, dict) and "error_message" in document:
        inner = document["error_message"]
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return inner
        if isinstance(inner, dict):
            return str(inner.get("faultstring") or inner)
        return str(inner)
    if isinstance(document, dict):
        # Other services' (and keystonemiddleware's) shapes: {"error": {"message": ...}}.
        error = document.get("error")
        text = document.get("message") or (
            error.get("message") if isinstance(error, dict) else None
        )
        if text:
            return str(text)
    return str(document)[:QUOTED]


def remove_trait(sender: Sender, node_uuid: str, trait: str) -> None:
    """DELETE the trait; the 404 for a trait the node has not is success, not for no node."""
    try:
        send(sender, "DELETE", node(node_uuid, "traits", trait))
    except HttpError as exc:
        if exc.status != 404 or MISSING_TRAIT not in exc.detail:
            raise


def _path(*parts: str) -> str:
    # A node name may hold characters a path may not; UUIDs and traits come through as is.
    return "/" + "/".join(urllib.parse.quote(part, safe="") for part in parts)
