"""A request as a worker holds it (a broker.Delivery it settles: ack, retry, dead-letter):
the back-off of a retry, the node lock it takes, and the request context of its log lines."""

import contextlib

from inspector import request_context
from inspector.broker.message import Request


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
