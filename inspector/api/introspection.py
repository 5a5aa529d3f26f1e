"""/v1/introspection: start, status, list, abort, stored data, reapply."""

import dataclasses

import flask

from inspector import errors
from inspector.api import intents, links, params, schemas, status, versions
from inspector.api.context import services
from inspector.ironic.client import RESERVED_NODE_PATHS
from inspector.machine import Event

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
    return services().ironic.get_node(ident).uuid


def stored(node_uuid: str):
    node = intents.load(services(), node_uuid)
    if node is None:
        raise errors.NotFound(f"Introspection for node {node_uuid} was not found")
    return node


def _check_provision_state(node) -> None:
    allowed = VALID_PROVISION_STATES
    if services().conf.processing.permit_active_introspection:
        allowed += ACTIVE_PROVISION_STATES
    if node.provision_state not in allowed:
        raise errors.BadRequest(
            f"Invalid provision state for introspection: {node.provision_state!r}, "
            f"valid states are {', '.join(repr(s) for s in allowed)}"
        )


@blueprint.post("/v1/introspection/<node_id>")
def start(node_id: str):
    authorize("introspection:start")
    params.only("manage_boot")
    manage_boot = params.boolean("manage_boot", default=True)
    # Ironic 2025.2 sends {"uuid": ...}; nothing else is read from it.
    schemas.validate(params.json_object(required=False) or {}, schemas.START, "request")
    svc = services()
    ironic_node = svc.ironic.get_node(params.node_ident(node_id))
    _check_provision_state(ironic_node)
    node = intents.load(svc, ironic_node.uuid)
    intents.record(
        svc,
        ironic_node.uuid,
        node,
        Event.INSPECT,
        manage_boot=manage_boot,
        snapshot=dataclasses.asdict(ironic_node),
    )
    return {}, 202


@blueprint.get("/v1/introspection/<node_id>")
def get_status(node_id: str):
    authorize("introspection:status")
    params.only()
    return status.status(stored(resolve(node_id)))


@blueprint.get("/v1/introspection")
def list_statuses():
    authorize("introspection:status")
    params.only("marker", "limit", "state")
    svc = services()
    nodes = svc.store.list_nodes(
        limit=params.limit(svc.conf.api_max_limit), marker=params.marker(), states=params.states()
    )
    under = links.root()
    return {"introspection": [status.status(node, under=under) for node in nodes]}


@blueprint.post("/v1/introspection/<node_id>/abort")
def abort(node_id: str):
    authorize("introspection:abort")
    params.only()
    node_uuid = resolve(node_id)
    intents.record(services(), node_uuid, stored(node_uuid), Event.ABORT)
    return {}, 202


def _data(node_id: str, *, processed: bool):
    authorize("introspection:data")
    params.only()
    svc = services()
    if svc.conf.processing.store_data == "none":
        raise errors.NotFound("Inspector is not configured to store introspection data")
    node_uuid = resolve(node_id)
    data = svc.store.get_data(node_uuid, processed=processed)
    if data is None:
        kind = "processed" if processed else "unprocessed"
        raise errors.NotFound(f"No {kind} introspection data stored for node {node_uuid}")
    return flask.jsonify(data)


@blueprint.get("/v1/introspection/<node_id>/data")
def get_data(node_id: str):
    return _data(node_id, processed=True)


@blueprint.get("/v1/introspection/<node_id>/data/unprocessed")
def get_unprocessed(node_id: str):
    # Added in 1.17, served at any version: the openstack CLI plugin asks for it at 1.0.
    return _data(node_id, processed=False)


@blueprint.post("/v1/introspection/<node_id>/data/unprocessed")
def reapply(node_id: str):
    authorize("introspection:reapply")
    params.only()
    svc = services()
    body = params.json_object(required=False)
    if body is not None:
        versions.require((1, 15), "reapply with a body")
        schemas.validate(body, schemas.REAPPLY, "introspection data")
    node_uuid = resolve(node_id)
    node = stored(node_uuid)
    intents.check(svc, node_uuid, node, Event.REAPPLY)
    if body is not None:
        svc.store.store_data(node_uuid, body, processed=False)
    elif svc.store.get_data(node_uuid, processed=False) is None:
        raise errors.BadRequest(f"No unprocessed introspection data stored for node {node_uuid}")
    intents.record(svc, node_uuid, node, Event.REAPPLY)
    return {}, 202
