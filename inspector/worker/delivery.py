"""A request as a worker holds it (a broker.Delivery it settles: ack, retry, dead-letter):
whether it can ever be applied, the back-off of a retry, the node lock it takes, and the
request context of its log lines."""

import contextlib

from inspector import request_context
from inspector.broker import Delivery
from inspector.broker.message import DELETE, EXPIRE, Request
from inspector.machine import Event
from inspector.worker import power

#: The names of the events a request may carry (besides the removals).
EVENT_NAMES = frozenset(event.value for event in Event)

#: Requests that still cannot be applied after this many attempts are dead-lettered.
MAX_ATTEMPTS = 200


def unusable(delivery: Delivery, max_attempts: int = MAX_ATTEMPTS) -> str | None:
    """Why a delivery can never be applied (then dead-lettered), or None."""
    request = delivery.request
    if request is None:
        return delivery.error or "malformed request"
    if request.attempt >= max_attempts:
        return f"not applicable after {request.attempt} attempts"
    if request.event not in (DELETE, EXPIRE, power.CHECK) and not _is_event(request.event):
        return f"unknown event {request.event!r}"
    return None


def counted_event(request: Request | None) -> str:
    """The event a dead letter is counted under: unknown ones are one series."""
    if request is None or not (request.event in (DELETE, EXPIRE) or _is_event(request.event)):
        return "unknown"
    return request.event


def _is_event(name: str) -> bool:
    return name in EVENT_NAMES


def backoff(attempt: int, base: float = 0.05, cap: float = 2.0) -> float:
    """Seconds before the next attempt of a request that could not be applied yet."""
    return min(cap, base * 2 ** min(attempt, 16))


def lock_name(node_uuid: str) -> str:
    return f"inspector-node-{node_uuid}"


def context_of(request: Request | None) -> contextlib.AbstractContextManager:
    """The request context while a worker handles `request`: its log lines and Ironic
    calls show the global request id of the API request that made it (see
    inspector.request_context), its log lines its own id too."""
    if request is None:
        return contextlib.nullcontext()
    return request_context.bound(
        request_context.Context(
            request_id=request.request_id, global_request_id=request.global_request_id
        )
    )
