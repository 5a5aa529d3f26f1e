"""Removal requests: `delete` (the node left Ironic) and `expire` (an ended introspection
outlived its keep time). Not transitions: always consumed, under the lock."""

import logging
from datetime import UTC

from inspector.broker.message import DELETE, Request
from inspector.machine import FINAL_STATES
from inspector.store import WorkerStore
from inspector.worker import metrics as outcomes

LOG = logging.getLogger(__name__)


def remove(store: WorkerStore, request: Request) -> str:
    """`delete` removes the node's records and history; `expire` removes an ended
    introspection's status and current data (its history stays),
    unless the node started another one since the request was made (its end is then
    later than the request)."""
    where = f"[node {request.node_uuid} req {request.request_id} {request.event}]"
    if request.event == DELETE:
        deleted = store.delete_node(request.node_uuid)
        forgotten = store.forget_history(request.node_uuid)
        LOG.info(
            "%s node records %s, %d past introspections forgotten",
            where,
            "deleted" if deleted else "absent",
            forgotten,
        )
        return outcomes.APPLIED
    node = store.load(request.node_uuid, request.request_id)[0]
    if node is None:
        LOG.info("%s node records already gone", where)
        return outcomes.APPLIED
    ended = node.finished_at.replace(tzinfo=UTC).timestamp() if node.finished_at else None
    if node.state not in FINAL_STATES or ended is None or ended > request.enqueued_at:
        LOG.info("%s node is in %s again: kept", where, node.state)
        return outcomes.APPLIED
    store.delete_node(request.node_uuid)
    LOG.info("%s expired: node records deleted", where)
    return outcomes.APPLIED
