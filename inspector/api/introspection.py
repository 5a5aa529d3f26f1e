"""/v1/introspection: start, status, list, abort, stored data, reapply."""

import dataclasses

import flask
from flask.typing import ResponseReturnValue

from inspector import errors, request_context
from inspector.api import intents, links, params, request_ids, schemas, status, versions
from inspector.api.context import services
from inspector.ironic import IronicNode
from inspector.ironic.client import RESERVED_NODE_PATHS
from inspector.machine import Event
from inspector.processing import drift, payload
from inspector.store import NodeRecord

blueprint = flask.Blueprint("introspection", __name__)

#: Provision states in which Ironic lets a node be introspected.
VALID_PROVISION_STATES = ("enroll", "manageable", "inspecting", "inspect wait", "inspect failed")
ACTIVE_PROVISION_STATES = ("active", "rescue")


def authorize(rule: str) -> None:
    services().policy.authorize(rule, flask.g.credentials)


def resolve(ident: str) -> str:
    """The node's UUID: as given, or looked up in Ironic by name."""
    ident = params.node_ident(ident)
    if params.is_uuid(ident):
        return ident
    if ident in RESERVED_NODE_PATHS:  # Ironic's own routes: no node has these names
        raise errors.NotFound(f"Node {ident} was not found in Ironic")
    node_uuid = services().ironic.get_node(ident).uuid
    request_context.set_node(node_uuid)  # the route named it by name
    return node_uuid


def stored(node_uuid: str) -> NodeRecord:
    return existing(node_uuid, intents.load(services(), node_uuid))


def existing(node_uuid: str, node: NodeRecord | None) -> NodeRecord:
    """The node as read; 404 when it has no introspection (None)."""
    if node is None:
        raise errors.NotFound(not_in_cache(node_uuid))
    return node


# The messages of ironic-inspector 12.5 for the same situations: clients match on them.


def not_in_cache(node_uuid: str) -> str:
    """ironic-inspector's node_cache.get_node."""
    return f"Could not find node {node_uuid} in cache"


def data_not_found(node_uuid: str, *, processed: bool) -> str:
    """ironic-inspector's db.api.get_introspection_data."""
    return f"Introspection data not found for node {node_uuid}, processed={processed}"


#: ironic-inspector's main._get_data.
STORE_DISABLED = (
    "Inspector is not configured to store data. "
    "Set the [processing]store_data configuration option to change this."
)


def arrive(node_uuid: str, event: Event) -> intents.Arrival:
    """The node, and the request's own id (X-Request-ID, X-OpenStack-Request-ID) unless
    this request is one sent again that took effect already (`replayed`)."""
    return intents.arrive(services(), node_uuid, event, request_ids.incoming(flask.request.headers))


def _check_provision_state(node: IronicNode) -> None:
    allowed: tuple[str, ...] = VALID_PROVISION_STATES
    if services().conf.processing.permit_active_introspection:
        allowed += ACTIVE_PROVISION_STATES
    if node.provision_state not in allowed:
        # ironic-inspector's common.ironic.check_provision_state, word for word
        raise errors.BadRequest(
            f'Invalid provision state for introspection: "{node.provision_state}", '
            f'valid states are "{list(allowed)}"'
        )


@blueprint.post("/v1/introspection/<node_id>")
def start(node_id: str) -> ResponseReturnValue:
    authorize("introspection:start")
    params.only("manage_boot")
    manage_boot = params.boolean("manage_boot", default=True)
    # Ironic 2025.2 sends {"uuid": ...}; nothing else is read from it.
    schemas.validate(params.json_object(required=False) or {}, schemas.START, "request")
    svc = services()
    ironic_node = svc.ironic.get_node(params.node_ident(node_id))
    arrival = arrive(ironic_node.uuid, Event.INSPECT)
    if arrival.replayed:  # started by this very request: its first attempt's answer
        return {}, 202
    _check_provision_state(ironic_node)
    intents.record(
        svc,
        ironic_node.uuid,
        arrival.node,
        Event.INSPECT,
        request_id=arrival.request_id,
        manage_boot=manage_boot,
        snapshot=dataclasses.asdict(ironic_node),
    )
    return {}, 202


@blueprint.get("/v1/introspection/<node_id>")
def get_status(node_id: str) -> ResponseReturnValue:
    authorize("introspection:status")
    params.only()
    return status.status(stored(resolve(node_id)))


@blueprint.get("/v1/introspection")
def list_statuses() -> ResponseReturnValue:
    authorize("introspection:status")
    params.only("marker", "limit", "state")
    svc = services()
    nodes = svc.store.list_nodes(
        limit=params.limit(svc.conf.api_max_limit), marker=params.marker(), states=params.states()
    )
    under = links.root()
    return {"introspection": [status.status(node, under=under) for node in nodes]}


@blueprint.post("/v1/introspection/<node_id>/abort")
def abort(node_id: str) -> ResponseReturnValue:
    authorize("introspection:abort")
    params.only()
    node_uuid = resolve(node_id)
    arrival = arrive(node_uuid, Event.ABORT)
    if not arrival.replayed:  # else aborted by this very request: answered as then
        node = existing(node_uuid, arrival.node)
        intents.record(services(), node_uuid, node, Event.ABORT, request_id=arrival.request_id)
    return {}, 202


def _data(node_id: str, *, processed: bool) -> flask.Response:
    authorize("introspection:data")
    params.only()
    svc = services()
    if svc.conf.processing.store_data == "none":
        raise errors.NotFound(STORE_DISABLED)
    node_uuid = resolve(node_id)
    data = svc.store.get_data(node_uuid, processed=processed)
    if data is None:
        raise errors.NotFound(data_not_found(node_uuid, processed=processed))
    if processed and isinstance(data, dict) and flask.g.api_version < versions.HISTORY:
        # The drift (1.19, Inspector's) is stored with the data for the rules to read; a
        # client of ironic-inspector's versions gets the data as ironic-inspector's was.
        data = {key: value for key, value in data.items() if key != drift.KEY}
    return flask.jsonify(data)


@blueprint.get("/v1/introspection/<node_id>/data")
def get_data(node_id: str) -> ResponseReturnValue:
    return _data(node_id, processed=True)


@blueprint.get("/v1/introspection/<node_id>/data/unprocessed")
def get_unprocessed(node_id: str) -> ResponseReturnValue:
    # Added in 1.17, served at any version: the openstack CLI plugin asks for it at 1.0.
    return _data(node_id, processed=False)


@blueprint.post("/v1/introspection/<node_id>/data/unprocessed")
def reapply(node_id: str) -> ResponseReturnValue:
    authorize("introspection:reapply")
    params.only()
    svc = services()
    body = params.json_object(required=False)
    if body is not None:
        versions.require((1, 15), "reapply with a body")
        schemas.validate(body, schemas.REAPPLY, "introspection data")
        problem = payload.refusal(body, svc.conf.limits)  # as /v1/continue's
        if problem is not None:
            raise errors.BadRequest(problem)
    node_uuid = resolve(node_id)
    arrival = arrive(node_uuid, Event.REAPPLY)
    if arrival.replayed:  # reapplied by this very request: answered as then
        return {}, 202
    if arrival.node is None and body is None:  # ironic-inspector reads the data first
        raise errors.NotFound(data_not_found(node_uuid, processed=False))
    node = existing(node_uuid, arrival.node)
    intents.check(svc, node_uuid, node, Event.REAPPLY)
    if body is not None:
        svc.store.store_data(node_uuid, body, processed=False)
    elif svc.store.get_data(node_uuid, processed=False) is None:
        # 404 as ironic-inspector's conductor do_reapply (it reads the data first)
        raise errors.NotFound(data_not_found(node_uuid, processed=False))
    intents.record(svc, node_uuid, node, Event.REAPPLY, request_id=arrival.request_id)
    return {}, 202
