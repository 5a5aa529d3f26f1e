"""Settling a power action's check request (inspector.worker.power) under its node's
lock: later while Ironic is at it, the next check enqueued when the action was asked
again, and a failed action's end: the node to error, or, for the final power-off, the
failure recorded on the finished introspection. The transitions go through the machine
and the handler's commit; nothing here talks to Ironic (the tasks do).
"""

import logging
from collections.abc import Callable

from inspector import redaction
from inspector.broker import Publisher
from inspector.broker.message import Request
from inspector.machine import Event, Machine, State, Transition
from inspector.store import NodeRecord, WorkerStore
from inspector.worker import metrics as outcomes
from inspector.worker import power
from inspector.worker.tasks import Runner

LOG = logging.getLogger(__name__)

#: The suffix of the request id under which a failed task's or power action's `error`
#: is committed.
FAILED = "error"
#: How loud each verdict is in the worker's log (a lost action: the tasks say it).
LEVELS = {
    power.Verdict.CONFIRMED: logging.INFO,
    power.Verdict.PENDING: logging.DEBUG,
    power.Verdict.UNANSWERED: logging.DEBUG,
    power.Verdict.LOST: logging.DEBUG,
    power.Verdict.MOVED_ON: logging.DEBUG,
    power.Verdict.IGNORED: logging.INFO,
    power.Verdict.FAILED: logging.ERROR,
}

#: Commits `transition` into an end state as the request `end` (Handler._end).
End = Callable[[NodeRecord, Request, Transition, Request, str], None]


class PowerChecks:
    """Settles check requests for the handler, which holds the node's lock."""

    def __init__(
        self, store: WorkerStore, queue: Publisher, tasks: Runner, machine: Machine, *, end: End
    ) -> None:
        self.store = store
        self.queue = queue
        #: Asks Ironic (Tasks.check_power).
        self.tasks = tasks
        self.machine = machine
        self.end = end

    def settle(self, request: Request) -> str | None:
        """How the check went (an outcome of inspector.worker.metrics); None: Ironic is
        still at it (the check comes back with the back-off); DEFERRED: Ironic cannot
        say now (it comes back the same way, its bound counted again from then)."""
        node, _ = self.store.load(request.node_uuid, request.request_id)
        outcome = self.tasks.check_power(node, request)
        LOG.log(
            LEVELS[outcome.verdict],
            "[node %s req %s] power action %s%s",
            request.node_uuid,
            request.request_id,
            outcome.verdict,
            f": {redaction.shorten(outcome.reason)}" if outcome.reason else "",
        )
        if outcome.verdict is power.Verdict.PENDING:
            return None
        if outcome.verdict is power.Verdict.UNANSWERED:
            return outcomes.DEFERRED
        if outcome.next_check is not None:
            self.queue.put(outcome.next_check)
        if outcome.verdict is not power.Verdict.FAILED or node is None:
            return outcomes.APPLIED
        state = State(node.state)
        event = Event.POWER_OFF_FAILED if state is State.FINISHED else Event.ERROR
        failed = self.machine.advance(state, event)
        # The check's whole id (the follow-up's cut would leave "power-o"): one per ask.
        end = request.follow_up(FAILED, request_id=f"{request.request_id}.{FAILED}")
        self.end(node, request, failed, end, outcome.reason)
        return outcomes.FAILED
