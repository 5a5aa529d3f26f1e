"""Committing a transition: the one way the API and the worker change a node's state.

The caller asks the machine where an event takes the node (`Machine.advance`), then
`commit` compare-and-swaps the node into the target on the version it read, with the
request's row, in one transaction (`Store.apply`): the columns each target implies
(times, error) come from `store.transitions.change_for`. A writer that read a stale
version loses (NodeBusy or Conflict): the worker retries later, the API answers 409.
"""

import logging

from inspector import request_context
from inspector.machine import RequestStatus, Transition
from inspector.store import UNSET, NodeRecord, WorkerStore
from inspector.store.nodes import Unset
from inspector.store.transitions import change_for

LOG = logging.getLogger(__name__)


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
