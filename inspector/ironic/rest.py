"""Ironic's REST API as plain requests on the baremetal proxy's keystoneauth adapter.

Owns the paths, the microversion and the decoding of each request: one HTTP request a call,
JSON in and out, Ironic's errors raised as openstacksdk's (raise_from_response) for
inspector.ironic.failures to judge. It never retries, and builds no openstacksdk resource:
their attribute machinery cost more CPU than the HTTP itself.
"""

import urllib.parse
from collections.abc import Callable
from typing import Any

import requests
from openstack import exceptions as sdk_exceptions

from inspector.ironic.connection import API_VERSION

#: What Ironic says (with a 404, as for a node it has not) to the removal of a trait the
#: node does not have: "Node <uuid> doesn't have a trait '<trait>'".
MISSING_TRAIT = "have a trait"

#: A keystoneauth adapter method: the proxy's get, put, patch, post or delete.
Method = Callable[..., requests.Response]


def node(ident: str, *parts: str) -> str:
    """The path of a node (by UUID or name), or of one of its sub-resources."""
    return _path("nodes", ident, *parts)


def port(port_uuid: str) -> str:
    return _path("ports", port_uuid)


def send(method: Method, path: str, body: Any = None, *, params: dict | None = None) -> Any:
    """Ironic's decoded JSON answer (None when it sent no body); openstacksdk's
    HttpException for an error, keystoneauth's exceptions when there was no answer."""
    # A new headers dict each time: keystoneauth adds the microversion headers to it.
    kwargs: dict[str, Any] = {
        "microversion": API_VERSION,
        "headers": {"Accept": "application/json"},
    }
    if body is not None:
        kwargs["json"] = body
    if params:
        kwargs["params"] = params
    response = method(path, **kwargs)
    sdk_exceptions.raise_from_response(response)
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError as exc:
        raise sdk_exceptions.SDKException(
            f"Ironic answered HTTP {response.status_code} with no JSON: {response.text[:200]!r}"
        ) from exc


def remove_trait(proxy: Any, node_uuid: str, trait: str) -> None:
    """DELETE the trait; the 404 for a trait the node has not is success, not for no node."""
    try:
        send(proxy.delete, node(node_uuid, "traits", trait))
    except sdk_exceptions.NotFoundException as exc:
        if MISSING_TRAIT not in str(exc.details or ""):
            raise


def _path(*parts: str) -> str:
    # A node name may hold characters a path may not; UUIDs and traits come through as is.
    return "/" + "/".join(urllib.parse.quote(part, safe="") for part in parts)
