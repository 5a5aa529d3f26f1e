"""POST /v1/continue: the ramdisk's callback. Checks the payload's types and [limits]
(a 400 naming the field), finds the node, stores the payload durably, enqueues `continue`
and answers at once; processing happens in a worker.

The payload's `logs` are never stored with the data nor logged.
"""

import logging
import uuid
from typing import Any

import flask
from flask.typing import ResponseReturnValue

from inspector import deadlines, errors, request_context
from inspector.api import auth, intents, params
from inspector.api.context import Services, services
from inspector.machine import EXPECTING_DATA, Event
from inspector.processing import lookup, payload, ramdisk_logs
from inspector.store import NodeRecord

LOG = logging.getLogger(__name__)

blueprint = flask.Blueprint("ramdisk", __name__)

#: Characters of a refusal's reason that reach the log.
MAX_LOGGED = 500


@blueprint.post("/v1/continue")
@auth.public
def continue_introspection() -> ResponseReturnValue:
    try:
        return _accept(services())
    except errors.InspectorError as exc:
        _refused(exc)
        raise


def _refused(exc: errors.InspectorError) -> None:
    """A ramdisk turned away is an introspection that will time out: say so (a real
    ramdisk does not post again after a 4xx). Rate-limited posts only at debug level,
    so that a flood does not flood the log too."""
    if not 400 <= exc.http_status < 500:
        return  # 5xx: logged where they are answered
    level = logging.DEBUG if exc.http_status == 429 else logging.WARNING
    message = exc.message.replace("\n", " ")  # ironic-inspector's lookup errors: 2 lines
    if len(message) > MAX_LOGGED:  # a schema error quotes the value it refused
        message = message[:MAX_LOGGED] + "..."
    LOG.log(
        level,
        "Ramdisk data from %s refused (HTTP %d): %s",
        flask.request.remote_addr,
        exc.http_status,
        message,
    )


def _accept(svc: Services) -> dict[str, Any] | tuple[dict[str, Any], int]:
    # Before anything reads the body: ramdisk logs make it larger than other routes'.
    flask.request.max_content_length = svc.conf.api.max_continue_body_size
    svc.guard.check(flask.request.remote_addr)
    params.only()
    data = params.json_object()
    # Types and [limits] before anything is looked up, stored or enqueued: a ramdisk
    # cannot make the service do unbounded work (a port per NIC of 50,000 NICs).
    problem = payload.refusal(data, svc.conf.limits)
    if problem is not None:
        raise errors.BadRequest(problem)
    logs = data.pop("logs", None)  # never stored with the data nor logged
    wanted = lookup.attributes(data)
    if not any(wanted.values()):
        raise errors.BadRequest("The data carries no MAC address or BMC address to look up")
    # The lookup reads the nodes it finds too: one round trip for both.
    found = svc.store.lookup_nodes(wanted)
    try:
        node_uuid = lookup.choose({uuid: count for uuid, (count, _) in found.items()}, wanted)
    except lookup.LookupFailed as exc:
        if exc.ambiguous or svc.conf.processing.node_not_found_hook != "enroll":
            raise
        return _discover(svc, data, logs)
    request_context.set_node(node_uuid)
    node = found[node_uuid][1]
    if node.state not in EXPECTING_DATA:
        raise errors.NotFound(_not_expecting(node))
    ramdisk_logs.store(svc.conf, node_uuid, data, logs)
    svc.store.store_data(node_uuid, data, processed=False)
    error = data.get("error")
    if error:
        message = f"Ramdisk reported error: {error}"
        intents.record(svc, node_uuid, node, Event.ERROR, reason=message)
        # As ironic-inspector answers it (its ramdisk_error hook's failure)
        raise errors.BadRequest(f"{lookup.FAILURES}Preprocessing hook ramdisk_error: {message}")
    request = intents.new_request(node_uuid, Event.CONTINUE)
    # Past the request's time limit, no worker is asked to process the data: the
    # ramdisk, answered 503, posts it again.
    deadlines.check("queue")
    svc.queue.put(request)
    LOG.info("[node %s req %s] ramdisk data received", node_uuid, request.request_id)
    return {"uuid": node_uuid}


def _not_expecting(node: NodeRecord) -> str:
    """Why data for `node` is refused: ironic-inspector's words (its find_node) for a
    finished introspection, ours for one still at work."""
    if node.finished_at is None:
        return f"Node {node.uuid} is not waiting for ramdisk data (state {node.state})"
    finished_at = node.finished_at.replace(tzinfo=None)  # as its naive UTC column prints
    return (
        f"{lookup.LOOKUP_ERROR}Introspection for node {node.uuid} already finished on {finished_at}"
    )


def _discover(svc: Services, data: dict[str, Any], logs: object) -> tuple[dict[str, Any], int]:
    """An unknown node with discovery on: a new introspection in `enrolling`, whose
    worker creates the node in Ironic and then processes the data."""
    node_uuid = str(uuid.uuid4())
    ramdisk_logs.store(svc.conf, node_uuid, data, logs)
    intents.record(svc, node_uuid, None, Event.ENROLL, data=data)
    LOG.info("[node %s] unknown node: enrolling it (discovery)", node_uuid)
    return {"uuid": node_uuid}, 200
