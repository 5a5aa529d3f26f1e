"""What wraps the worker's step without being in it: the metrics and the fault injection
around the task call and around each link of the step's loop (inspector.worker.handler).

Each wrapper takes the call it wraps and returns one of the same shape, as dramatiq's
middleware does: they count, time or hold the step up, and never change what it does.
"""

import time
from collections.abc import Callable

from inspector import errors
from inspector.broker.message import Request
from inspector.machine import Transition
from inspector.store import NodeRecord
from inspector.worker import metrics as outcomes
from inspector.worker.faults import Faults
from inspector.worker.metrics import Recorder

#: A transition's task (Runner.run): the check of the power action it asked for, if any.
TaskCall = Callable[[NodeRecord, Request, Transition], Request | None]
#: One link of the step's loop: a committed transition's task (none when it already
#: ran) and how it went recorded; its outcome (inspector.worker.metrics).
Link = Callable[[NodeRecord, Request, Transition, bool], str]


def is_outage(exc: Exception) -> bool:
    """A backend outage that stopped a task: not a verdict on the node."""
    return isinstance(exc, errors.ServiceUnavailable) and bool(exc.service)


def timed(
    metrics: Recorder, task: TaskCall, clock: Callable[[], float] = time.perf_counter
) -> TaskCall:
    """The task's seconds, by its target state, failed or not; an outage's interruption
    counted (the handler leaves the request unacked)."""

    def timed_task(node: NodeRecord, request: Request, transition: Transition) -> Request | None:
        began = clock()
        try:
            check = task(node, request, transition)
        except Exception as exc:
            metrics.task_duration(transition.target, clock() - began)
            if is_outage(exc):
                metrics.transition(request.event, outcomes.INTERRUPTED)
            raise
        metrics.task_duration(transition.target, clock() - began)
        return check

    return timed_task


def slowed(faults: Faults, task: TaskCall) -> TaskCall:
    """The task, after the delay `slow_task` gives its event (inert without faults)."""

    def slowed_task(node: NodeRecord, request: Request, transition: Transition) -> Request | None:
        faults.task_delay(request.event)
        return task(node, request, transition)

    return slowed_task


def paused(faults: Faults, link: Link) -> Link:
    """The link, then the pause `pause_before_ack` gives its event: its task's outcome
    recorded (marked ran, or the node in error), its follow-up not yet applied or
    enqueued, the request not done nor acknowledged. The crash tests kill it there."""

    def paused_link(node: NodeRecord, request: Request, transition: Transition, ran: bool) -> str:
        outcome = link(node, request, transition, ran)
        faults.before_ack(request.event, request.request_id)
        return outcome

    return paused_link
