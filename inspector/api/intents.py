"""Recording an operator's intent: the API applies the transition itself (so a status read
right after the answer shows it) and enqueues the request for a worker to do its task.

A refused transition is answered honestly: 409 when the node is busy in an active state,
400 when the request makes no sense in its state.
"""

import logging

from inspector import errors
from inspector.api.context import Services
from inspector.broker.message import Request
from inspector.machine import ACTIVE_STATES, Event, State, Transition
from inspector.store import UNSET, NodeRecord, requests
from inspector.store.transitions import change_for

LOG = logging.getLogger(__name__)

_VERBS = {Event.INSPECT: "start introspection of", Event.ABORT: "abort", Event.REAPPLY: "reapply"}


def load(svc: Services, node_uuid: str) -> NodeRecord | None:
    try:
        return svc.store.get_node(node_uuid)
    except errors.NotFound:
        return None


def check(svc: Services, node_uuid: str, node: NodeRecord | None, event: Event) -> Transition:
    """The transition `event` makes; 409 when the node is busy, 400 when it makes no sense."""
    state = None if node is None else State(node.state)
    try:
        return svc.machine.advance(state, event)
    except errors.InvalidTransition:
        verb = _VERBS.get(event, event.value)
        if state in ACTIVE_STATES:
            raise errors.Conflict(
                f"Cannot {verb} node {node_uuid}: it is busy (introspection state {state})"
            ) from None
        where = "it has no introspection" if state is None else f"introspection state {state}"
        raise errors.BadRequest(f"Cannot {verb} node {node_uuid}: {where}") from None


def record(
    svc: Services,
    node_uuid: str,
    node: NodeRecord | None,
    event: Event,
    *,
    reason: str | None = None,
    manage_boot: bool | None = None,
    data: dict | None = None,
    snapshot: dict | None = None,
) -> NodeRecord:
    """Commit `event`'s transition (compare-and-swap), store `data` as the node's raw
    data and `snapshot` as the Ironic node just read (so that the worker need not read
    it again) if given, and enqueue the request for a worker."""
    transition = check(svc, node_uuid, node, event)
    request = Request(node_uuid=node_uuid, event=event)
    change = change_for(
        transition,
        node_uuid,
        node,
        request.request_id,
        svc.store.clock(),
        status=requests.APPLIED,
        reason=reason,
        manage_boot=UNSET if manage_boot is None else manage_boot,
    )
    try:
        committed = svc.store.apply(change, node)
    except (errors.NodeBusy, errors.Conflict) as exc:
        raise errors.Conflict(f"Node {node_uuid} changed meanwhile, try again: {exc}") from exc
    if data is not None:
        svc.store.store_data(node_uuid, data, processed=False)
    if snapshot is not None:
        svc.store.save_snapshot(node_uuid, snapshot, None)
    _enqueue(svc, request, committed)
    LOG.info(
        "[node %s req %s] %s -> %s (API)",
        node_uuid,
        request.request_id,
        transition.source,
        committed.state,
    )
    return committed


def _enqueue(svc: Services, request: Request, node: NodeRecord) -> None:
    try:
        svc.queue.put(request)
    except errors.InspectorError as exc:
        # The state is committed but no worker will ever see it: fail the node
        # visibly instead of leaving it until the time-out.
        LOG.error("[node %s] cannot enqueue %s: %s", node.uuid, request.event, exc)
        failed = svc.machine.advance(State(node.state), Event.ERROR)
        svc.store.apply(
            change_for(
                failed,
                node.uuid,
                node,
                request.follow_up(Event.ERROR).request_id,
                svc.store.clock(),
                status=requests.DONE,
                reason=f"The work queue is unavailable: {exc.message}",
            ),
            node,
        )
        raise errors.ServiceUnavailable(f"The work queue is unavailable: {exc.message}") from exc
