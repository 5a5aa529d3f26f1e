"""/v1/introspection/<node>/history and /drift (API 1.19, Inspector's extension): a
node's past introspections, each one's data, and what changed in the hardware between
two of them. Below 1.19 these routes do not exist (404)."""

from typing import Any

import flask
from flask.typing import ResponseReturnValue

from inspector import errors
from inspector.api import intents, links, params, versions
from inspector.api.context import services
from inspector.api.introspection import authorize, resolve
from inspector.api.status import timestamp
from inspector.processing import comparison
from inspector.store.introspections import EntryRecord

blueprint = flask.Blueprint("history", __name__)

#: Digits of an introspection id at most (a 64-bit integer's).
MAX_DIGITS = 18


def _entry(node_uuid: str, entry: EntryRecord, under: str) -> dict[str, Any]:
    path = f"v1/introspection/{node_uuid}/history/{entry.id}"
    return {
        "id": entry.id,
        "source": entry.source,
        "state": entry.state,
        "started_at": timestamp(entry.started_at),
        "finished_at": timestamp(entry.finished_at),
        "error": entry.error,
        "links": [
            links.link(f"{path}/data", "data", under=under),
            links.link(f"{path}/data/unprocessed", "unprocessed", under=under),
        ],
    }


def _node(node_id: str, rule: str, what: str) -> str | None:
    """The node's UUID once the version and the policy allow `what`; None when no data
    is stored ([processing] store_data = none: no history)."""
    versions.require(versions.HISTORY, what)
    authorize(rule)
    node_uuid = resolve(node_id)
    svc = services()
    if svc.conf.processing.store_data == "none":
        return None
    if not svc.store.has_history(node_uuid) and intents.load(svc, node_uuid) is None:
        raise errors.NotFound(f"Node {node_uuid} has no introspection history")
    return node_uuid


def _ident(value: str, node_uuid: str) -> int:
    """An introspection id of the node's history (a positive integer)."""
    if not value.isdigit() or len(value) > MAX_DIGITS:
        raise errors.NotFound(f"Introspection {value!r} of node {node_uuid} not found")
    return int(value)


@blueprint.get("/v1/introspection/<node_id>/history")
def history(node_id: str) -> ResponseReturnValue:
    params.only("marker", "limit")
    node_uuid = _node(node_id, "introspection:status", "The introspection history")
    if node_uuid is None:
        return {"history": []}
    limit = params.limit(services().conf.api_max_limit)
    raw_marker = flask.request.args.get("marker")
    if raw_marker is not None and not (raw_marker.isdigit() and len(raw_marker) <= MAX_DIGITS):
        raise errors.BadRequest("Bad request: Marker not an introspection id")
    marker = None if raw_marker is None else int(raw_marker)
    entries = services().store.history_page(node_uuid, limit=limit, marker=marker)
    under = links.root()
    return {"history": [_entry(node_uuid, entry, under) for entry in entries]}


def _found(node_uuid: str | None, ident: str) -> tuple[EntryRecord, dict[str, Any]]:
    """The entry `ident` of the node's history and its data; 404 naming what is unknown."""
    if node_uuid is None:
        raise errors.NotFound(f"Introspection {ident} not found: no data is stored")
    number = _ident(ident, node_uuid)
    found = services().store.history_data(node_uuid, number)
    if found is None:
        raise errors.NotFound(f"Introspection {ident} of node {node_uuid} not found")
    return found


def _data(node_id: str, ident: str, kind: str) -> flask.Response:
    node_uuid = _node(node_id, "introspection:data", "The data of a past introspection")
    entry, data = _found(node_uuid, ident)
    if data[kind] is None:
        raise errors.NotFound(f"Introspection {entry.id} of node {node_uuid} kept no {kind} data")
    return flask.jsonify(data[kind])


@blueprint.get("/v1/introspection/<node_id>/history/<ident>/data")
def history_data(node_id: str, ident: str) -> ResponseReturnValue:
    params.only()
    return _data(node_id, ident, "processed")


@blueprint.get("/v1/introspection/<node_id>/history/<ident>/data/unprocessed")
def history_unprocessed(node_id: str, ident: str) -> ResponseReturnValue:
    params.only()
    return _data(node_id, ident, "raw")


@blueprint.get("/v1/introspection/<node_id>/drift")
def node_drift(node_id: str) -> ResponseReturnValue:
    params.only("from", "to")
    node_uuid = _node(node_id, "introspection:data", "The hardware drift")
    if node_uuid is None:
        return comparison.document(None, None, [])
    args = flask.request.args
    wanted = [None if args.get(k) is None else _ident(args[k], node_uuid) for k in ("from", "to")]
    return comparison.between(services().store, node_uuid, *wanted)
