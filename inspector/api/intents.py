"""Recording an operator's intent: the API applies the transition itself (so a status read
right after the answer shows it) and enqueues the request for a worker to do its task.

A refused transition is answered honestly: 409 when the node is busy in an active state,
400 when the request makes no sense in its state. A request sent again (the same request
id: HAProxy's retry after the back end of the first attempt died) that already took
effect is answered as its first attempt was, and takes effect only once (`arrive`).
"""

import dataclasses
import logging
from datetime import timedelta
from typing import Any

from inspector import errors, request_context
from inspector.api.context import Services
from inspector.broker.message import Request
from inspector.commit import commit
from inspector.machine import (
    ACTIVE_STATES,
    API_EVENTS,
    UNFINISHED,
    Event,
    RequestStatus,
    State,
    Transition,
)
from inspector.store import UNSET, NodeRecord

LOG = logging.getLogger(__name__)

_VERBS = {Event.INSPECT: "start introspection of", Event.ABORT: "abort", Event.REAPPLY: "reapply"}

#: How long after its first attempt a request sent again is still that request: HAProxy
#: re-sends within its timeouts (`timeout server` times `retries`), a client that keeps
#: its request id within its own. An older record of the id is another request's (a
#: client reusing ids): the request is then recorded under a new id.
REPLAY_WINDOW = timedelta(minutes=10)
#: The follow-up id suffix of the `error` that fails a node whose request could not be
#: enqueued (the first attempt was answered 503: so is the request sent again).
UNQUEUED = "unqueued"


@dataclasses.dataclass(frozen=True)
class Arrival:
    """A request that would change a node, as it arrives: the node as read (None: no
    introspection), the id to record the event under (None: a new one), and whether it
    is a request sent again whose first attempt already took effect."""

    node: NodeRecord | None
    request_id: str | None
    replayed: bool = False


def load(svc: Services, node_uuid: str) -> NodeRecord | None:
    try:
        return svc.store.get_node(node_uuid)
    except errors.NotFound:
        return None


def arrive(svc: Services, node_uuid: str, event: Event, request_id: str | None) -> Arrival:
    """The node, and what became of the request `request_id` names (the proxy's or the
    client's, see request_ids; None: the request has none), in one round trip.

    Replayed when that very request already recorded `event` on this node within
    REPLAY_WINDOW: the caller answers as the first attempt did, without doing anything
    again (503 again if the first attempt could not enqueue it; enqueued again, same id,
    if it still waits for its worker, in case the first attempt died before enqueuing).
    An id recorded for anything else is not reused: the event gets a new one."""
    request_context.set_node(node_uuid)
    if request_id is None:
        return Arrival(load(svc, node_uuid), None)
    node, seen = svc.store.load(node_uuid, request_id)
    if seen is None:
        return Arrival(node, request_id)
    if (
        seen.node_uuid != node_uuid
        or seen.event != event
        or svc.store.clock() - seen.applied_at > REPLAY_WINDOW
    ):
        LOG.info(
            "[node %s] request id %s names an earlier request (%s of node %s): %s gets a new id",
            node_uuid,
            request_id,
            seen.event,
            seen.node_uuid,
            event,
        )
        return Arrival(node, None)
    request = new_request(node_uuid, event, request_id)
    unqueued = svc.store.find_request(request.follow_up(UNQUEUED).request_id)
    if unqueued is not None:
        raise errors.ServiceUnavailable(unqueued.reason or "The work queue was unavailable")
    if node is not None and seen.status in UNFINISHED and node.version == seen.version:
        # Nothing moved the node since: its worker may never have got the request (a
        # duplicate is consumed by request id, see worker.handler).
        _enqueue(svc, request, node)
    LOG.info(
        "[node %s req %s] %s sent again: it took effect already (%s), answered as then",
        node_uuid,
        request_id,
        event,
        seen.status,
    )
    return Arrival(node, request_id, replayed=True)


def check(svc: Services, node_uuid: str, node: NodeRecord | None, event: Event) -> Transition:
    """The transition `event` makes; 409 when the node is busy, 400 when it makes no sense."""
    if event not in API_EVENTS:
        raise ValueError(f"The API does not commit {event}")  # a bug: the table says
    state = None if node is None else State(node.state)
    try:
        return svc.machine.advance(state, event)
    except errors.InvalidTransition:
        if state in ACTIVE_STATES:
            raise errors.Conflict(busy(node_uuid, state, event)) from None
        verb = _VERBS.get(event, event.value)
        where = "it has no introspection" if state is None else f"introspection state {state}"
        raise errors.BadRequest(f"Cannot {verb} node {node_uuid}: {where}") from None


def busy(node_uuid: str, state: State, event: Event) -> str:
    """The 409's message for `event` on a node in an active `state`: ironic-inspector's
    words where it refused the same request (it held its node lock in every active state
    but `waiting`), ours saying why otherwise."""
    if state is not State.WAITING:  # ironic-inspector held its node lock
        if event is Event.REAPPLY:
            return "Node locked, please, try again later"  # its process.reapply
        if event is Event.ABORT:
            return "Node is locked, please, retry later"  # its introspect.abort
        if event is Event.INSPECT:  # its node_cache.start_introspection (automaton's)
            return (
                f"Can not transition from state '{state}' on event 'start' (no defined transition)"
            )
    verb = _VERBS.get(event, event.value)
    return f"Cannot {verb} node {node_uuid}: its introspection is not finished (state {state})"


def record(
    svc: Services,
    node_uuid: str,
    node: NodeRecord | None,
    event: Event,
    *,
    request_id: str | None = None,
    reason: str | None = None,
    manage_boot: bool | None = None,
    data: dict | None = None,
    snapshot: dict | None = None,
) -> NodeRecord | None:
    """Commit `event`'s transition (compare-and-swap) as the request `request_id` (None:
    the API request's own id, see new_request; else as `arrive` gave it), store `data`
    as the node's raw data and `snapshot` as the Ironic node just read (so that the
    worker need not read it again) if given, and enqueue the request for a worker. The
    node as committed (as read, when another attempt of the same request committed it
    meanwhile)."""
    request_context.set_node(node_uuid)
    transition = check(svc, node_uuid, node, event)
    request = new_request(node_uuid, event, request_id)
    try:
        committed = commit(
            svc.store,
            node_uuid,
            node,
            transition,
            request.request_id,
            status=RequestStatus.APPLIED,  # the worker runs its task
            reason=reason,
            manage_boot=UNSET if manage_boot is None else manage_boot,
            by="API",
        )
    except (errors.NodeBusy, errors.Conflict) as exc:
        if request_id is not None:
            arrival = arrive(svc, node_uuid, event, request_id)
            if arrival.replayed:  # its other attempt, at the same time
                return arrival.node
        # exc names the node too: its details go to the log, not into the answer
        LOG.info("[node %s] %s refused, the node changed meanwhile: %s", node_uuid, event, exc)
        raise errors.Conflict(f"Node {node_uuid} changed meanwhile, try again") from exc
    if data is not None:
        svc.store.store_data(node_uuid, data, processed=False)
    if snapshot is not None:
        svc.store.save_snapshot(node_uuid, snapshot, None)
    _enqueue(svc, request, committed)
    return committed


def new_request(
    node_uuid: str, event: str, request_id: str | None = None, **fields: Any
) -> Request:
    """The request to record and enqueue: under `request_id`, else under the API
    request's own id (the X-OpenStack-Request-Id of its answer; a new id outside one),
    carrying the API request's global request id to the worker."""
    context = request_context.current()
    if context is not None:
        fields["global_request_id"] = context.global_id
        request_id = request_id or context.request_id
    if request_id is not None:
        fields["request_id"] = request_id
    return Request(node_uuid=node_uuid, event=event, **fields)


def _enqueue(svc: Services, request: Request, node: NodeRecord) -> None:
    try:
        svc.queue.put(request)
    except errors.InspectorError as exc:
        # The state is committed but no worker will ever see it: fail the node
        # visibly instead of leaving it until the time-out.
        LOG.error("[node %s] cannot enqueue %s: %s", node.uuid, request.event, exc)
        failed = svc.machine.advance(State(node.state), Event.ERROR)
        commit(
            svc.store,
            node.uuid,
            node,
            failed,
            request.follow_up(UNQUEUED).request_id,
            status=RequestStatus.DONE,
            reason=f"The work queue is unavailable: {exc.message}",
            by="API",
        )
        raise errors.ServiceUnavailable(f"The work queue is unavailable: {exc.message}") from exc
