"""The request a thread works for: its oslo.context RequestContext, which every log line
written meanwhile shows (oslo.log's `[global_request_id request_id user project ...]`)
and whose global request id every call to Ironic made meanwhile passes on.

The API binds one per HTTP request (inspector.api.request_ids), a worker one per queued
request (inspector.worker.handler): a context variable, set for the call and reset
after it, never oslo.context's thread store (a thread reused for the next request would
keep showing the last one). `install` puts the bound context on the log records of
every handler (oslo.log's formatters read `record.context`).
"""

import contextlib
import contextvars
import logging
import re
from collections.abc import Iterator
from typing import Any

from oslo_context import context as oslo_context

#: The header that passes a global request id on, as keystoneauth sends it.
GLOBAL_ID_HEADER = "X-OpenStack-Request-ID"
#: A global request id another service accepts: oslo.middleware's ID_FORMAT ("req-" and
#: a lower-case UUID); anything else is ignored there, so it is not sent.
GLOBAL_ID = re.compile(
    r"req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}", re.ASCII
)

_CURRENT: contextvars.ContextVar["Context | None"] = contextvars.ContextVar(
    "inspector_request_context", default=None
)


class Context(oslo_context.RequestContext):
    """oslo.context's RequestContext, kept out of its thread store (see `bound`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(overwrite=False, **kwargs)

    def update_store(self) -> None:
        """Never the thread store: the context variable `bound` sets is the current one."""


def current() -> Context | None:
    """The context bound in this thread (or task); None outside any request."""
    return _CURRENT.get()


@contextlib.contextmanager
def bound(context: Context) -> Iterator[Context]:
    """`context` is the current one until the block ends, then the previous one again."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def set_node(node_uuid: str) -> None:
    """Name the node the current request is about (its log lines show it); no-op outside
    a request."""
    context = _CURRENT.get()
    if context is not None:
        context.resource_uuid = node_uuid


def names_node(node_uuid: str) -> bool:
    """Whether the current request names this node: its log lines show `[node <uuid>] `
    already (oslo.log's instance_uuid_format), a message need not repeat it."""
    context = _CURRENT.get()
    return context is not None and context.resource_uuid == node_uuid


def is_global_id(value: str | None) -> bool:
    return value is not None and GLOBAL_ID.fullmatch(value) is not None


def outgoing_headers() -> dict[str, str]:
    """The headers of a call made for the current request: its global request id (its
    own id when it came with none), if another service would accept it."""
    context = _CURRENT.get()
    if context is None:
        return {}
    global_id = context.global_id
    return {GLOBAL_ID_HEADER: global_id} if is_global_id(global_id) else {}


class ContextFilter(logging.Filter):
    """Puts the current context on every record that has none of its own (None outside
    a request, so that oslo.log never falls back to a stale thread store). Never drops
    a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "context" not in record.__dict__:
            record.context = _CURRENT.get()
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Attach a ContextFilter to every handler of logger (the root logger by default)
    that has none yet."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
