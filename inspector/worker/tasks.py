"""The work bound to each transition, and the follow-up events it produces.

A task runs under the node lock after the state change is committed, so it must be
idempotent for reentrant events: a redelivered request runs it again.
"""

import logging

from inspector.broker.message import Request
from inspector.machine import Event, State, Transition
from inspector.store import NodeRecord

LOG = logging.getLogger(__name__)

#: Events a worker enqueues once the task of a transition into these states ran.
FOLLOW_UPS: dict[State, tuple[Event, ...]] = {
    State.STARTING: (Event.WAIT,),
    State.PROCESSING: (Event.FINISH,),
    State.REAPPLYING: (Event.FINISH,),
    State.ENROLLING: (Event.CONTINUE,),
}

#: The error message of an `error` event whose request carries none.
DEFAULT_ERROR = "Introspection failed"


class Tasks:
    """Runs the task of a transition. Subclasses do the Ironic and processing work."""

    def has_work(self, target: State) -> bool:
        """Whether entering target runs a task or enqueues a follow-up."""
        return target in FOLLOW_UPS

    def run(self, node: NodeRecord, request: Request, transition: Transition) -> list[Event]:
        """Do the transition's work; return the follow-up events to enqueue."""
        handler = {
            State.STARTING: self.start,
            State.PROCESSING: self.process,
            State.REAPPLYING: self.process,
        }.get(transition.target)
        if handler is not None:
            handler(node, request)
        return list(FOLLOW_UPS.get(transition.target, ()))

    def start(self, node: NodeRecord, request: Request) -> None:
        """Prepare the node and make it boot the ramdisk (Ironic work: see processing)."""
        LOG.debug("[node %s req %s] start task", node.uuid, request.request_id)

    def process(self, node: NodeRecord, request: Request) -> None:
        """Process the stored ramdisk data (hooks, rules, Ironic update, power off)."""
        LOG.debug("[node %s req %s] process task", node.uuid, request.request_id)

    def error_reason(self, request: Request) -> str:
        """The message an `error` request puts on the node."""
        return DEFAULT_ERROR
