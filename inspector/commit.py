"""Committing a transition: the one way the API and the worker change a node's state.

The caller asks the machine where an event takes the node (`Machine.advance`), then
`commit` compare-and-swaps the node into the target on the version it read, with the
request's row, in one transaction (`Store.apply`): what it writes besides the state
(times, error) is the target's entry in the machine's table (`change_for`). A writer that
read a stale version loses (NodeBusy or Conflict): the worker retries later, the API
answers 409.
"""

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import TypeVar

from inspector import request_context
from inspector.effects import Value
from inspector.machine import RequestStatus, Transition
from inspector.store import UNSET, Change, NodeRecord, Unset, WorkerStore

LOG = logging.getLogger(__name__)
T = TypeVar("T")


def change_for(
    transition: Transition,
    node_uuid: str,
    node: NodeRecord | None,
    request_id: str,
    now: datetime,
    *,
    status: str,
    reason: str | None = None,
    manage_boot: bool | Unset = UNSET,
) -> Change:
    """The Change that moves `node` along `transition`, with the columns its target's
    entry writes (`machine.ENTRIES`): now, cleared, or the error message (`reason`, else
    the transition's own); the others are kept."""
    writes = transition.effects.writes
    moments: dict[Value, datetime | None] = {Value.NOW: now, Value.CLEARED: None}
    messages = {Value.REASON: reason or transition.reason, Value.CLEARED: None}
    return Change(
        node_uuid=node_uuid,
        expected_version=None if node is None else node.version,
        request_id=request_id,
        event=transition.event,
        source=transition.source,
        target=transition.target,
        status=status,
        manage_boot=manage_boot,
        started_at=_written(moments, writes.started_at),
        finished_at=_written(moments, writes.finished_at),
        error=_written(messages, writes.error),
    )


def _written(values: Mapping[Value, T], value: Value | None) -> T | Unset:
    """What a column is set to: UNSET (kept) when its entry does not write it."""
    return UNSET if value is None else values[value]


def commit(
    store: WorkerStore,
    node_uuid: str,
    node: NodeRecord | None,
    transition: Transition,
    request_id: str,
    *,
    status: RequestStatus,
    reason: str | None = None,
    manage_boot: bool | Unset = UNSET,
    by: str = "",
) -> NodeRecord:
    """Move `node` (as read; None: no introspection yet) along `transition` as the
    request `request_id`, recorded with `status`; the node as committed. `reason` is the
    error message when the target is `error` and the transition has none of its own."""
    change = change_for(
        transition,
        node_uuid,
        node,
        request_id,
        store.clock(),
        status=status,
        reason=reason,
        manage_boot=manage_boot,
    )
    committed = store.apply(change, node)
    # The node once: an API request's context names it on the line already.
    named = "" if request_context.names_node(node_uuid) else f"node {node_uuid} "
    LOG.info(
        "[%sreq %s %s] %s -> %s%s",
        named,
        request_id,
        transition.event,
        transition.source,
        committed.state,
        f" ({by})" if by else "",
    )
    return committed
