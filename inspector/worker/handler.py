"""One request, one step: lock the node, compute and commit the transition, run its task,
apply or enqueue its follow-ups, acknowledge. The design's worker loop body, written for
redelivery.

A follow-up into a state without a task of its own (`wait` after a start, `finish` after
processing) is applied at once, under the lock the step holds: no queue round trip, and
the node is `waiting` or `finished` the moment its task is done. One whose transition
runs a task (enrolment's `continue`), or that cannot be applied now, is enqueued.

Never blocks on a lock (busy: retry later) and never acknowledges before the state change
is committed and the follow-ups are applied or enqueued.
"""

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC
from typing import Protocol

from inspector import errors, redaction, request_context
from inspector.broker.message import DELETE, EXPIRE, Request
from inspector.coordination import Coordinator
from inspector.machine import FINAL_STATES, STRICT_EVENTS, Event, Machine, State, Transition
from inspector.store import NodeRecord, RequestRecord, Store, requests
from inspector.store.transitions import change_for
from inspector.worker import metrics as outcomes
from inspector.worker.faults import NO_FAULTS, Faults
from inspector.worker.metrics import NoMetrics, Recorder
from inspector.worker.tasks import Tasks

LOG = logging.getLogger(__name__)

#: Requests that still cannot be applied after this many attempts are dead-lettered.
MAX_ATTEMPTS = 200


class Delivery(Protocol):
    request: Request | None
    error: str | None

    def ack(self) -> None: ...
    def retry(self, delay: float) -> None: ...
    def dead_letter(self, reason: str) -> None: ...


class Publisher(Protocol):
    def put(self, request: Request) -> None: ...


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


class Handler:
    def __init__(
        self,
        store: Store,
        coordinator: Coordinator,
        queue: Publisher,
        tasks: Tasks,
        *,
        machine: Machine | None = None,
        faults: Faults = NO_FAULTS,
        max_attempts: int = MAX_ATTEMPTS,
        delay: Callable[[int], float] = backoff,
        metrics: Recorder | None = None,
    ) -> None:
        self.store = store
        self.coordinator = coordinator
        self.queue = queue
        self.tasks = tasks
        self.machine = machine or Machine()
        self.faults = faults
        self.max_attempts = max_attempts
        self.delay = delay
        self.metrics = metrics or NoMetrics()

    def handle(self, delivery: Delivery) -> None:
        """Settle one delivery: ack, retry later, or dead-letter. Store, queue and DLM
        outages propagate (the delivery is then neither acked nor lost)."""
        with context_of(delivery.request):
            self._handle(delivery)

    def _handle(self, delivery: Delivery) -> None:
        request = delivery.request
        if request is None:
            delivery.dead_letter(delivery.error or "malformed request")
            self.metrics.transition("unknown", outcomes.DEAD_LETTERED)
            return
        if request.attempt >= self.max_attempts:
            delivery.dead_letter(f"not applicable after {request.attempt} attempts")
            self.metrics.transition(request.event, outcomes.DEAD_LETTERED)
            return
        if request.event not in (DELETE, EXPIRE) and not _is_event(request.event):
            delivery.dead_letter(f"unknown event {request.event!r}")
            self.metrics.transition("unknown", outcomes.DEAD_LETTERED)
            return
        with self.coordinator.try_lock(lock_name(request.node_uuid)) as held:
            if not held:
                self._log(request, logging.DEBUG, "node is locked by another worker: later")
                delivery.retry(self.delay(request.attempt))
                self.metrics.lock_busy()
                self.metrics.transition(request.event, outcomes.RETRIED)
                return
            outcome = self._step(request)
            if outcome is not None:
                delivery.ack()
            else:
                delivery.retry(self.delay(request.attempt))
            self.metrics.transition(request.event, outcome or outcomes.RETRIED)

    def _log(self, request: Request, level: int, message: str, *args, **kwargs) -> None:
        LOG.log(
            level,
            "[node %s req %s %s] " + message,
            request.node_uuid,
            request.request_id,
            request.event,
            *args,
            **kwargs,
        )

    def _step(self, request: Request) -> str | None:
        """Apply the request under the node lock and say how it went (an outcome of
        inspector.worker.metrics); None means "not yet, retry later"."""
        if request.event in (DELETE, EXPIRE):
            return self._remove(request)
        return self._apply(request)

    def _apply(self, request: Request, *, follow_up: bool = False) -> str | None:
        """An event's step. A `follow_up` applied in its parent's step is left for the
        queue (None) when it was seen before or its transition runs a task."""
        event = Event(request.event)
        node, seen = self.store.load(request.node_uuid, request.request_id)
        if seen is not None:
            return None if follow_up else self._redelivered(request, event, seen, node)
        if node is None and not self.machine.can(None, event):
            self._log(request, logging.INFO, "node not in the store (yet): later")
            return None
        state = None if node is None else State(node.state)
        try:
            transition = self.machine.advance(state, event)
        except errors.InvalidTransition as exc:
            return self._refused(request, event, node, exc)
        if follow_up and not self.tasks.is_quick(transition.target):
            return None
        try:
            node = self._commit(node, request, transition)
        except (errors.NodeBusy, errors.Conflict) as exc:
            self._log(request, logging.INFO, "lost a race (%s): later", exc.message)
            return None
        ran = not self.tasks.has_work(transition.target) or self._run(node, request, transition)
        return outcomes.APPLIED if ran else outcomes.FAILED

    def _remove(self, request: Request) -> str:
        """Removal requests are always consumed. `delete` removes the node's records;
        `expire` removes an ended introspection, unless the node started another one
        since the request was made (its end is then later than the request)."""
        if request.event == DELETE:
            deleted = self.store.delete_node(request.node_uuid)
            self._log(request, logging.INFO, "node records %s", "deleted" if deleted else "absent")
            return outcomes.APPLIED
        node = self.store.load(request.node_uuid, request.request_id)[0]
        if node is None:
            self._log(request, logging.INFO, "node records already gone")
            return outcomes.APPLIED
        ended = node.finished_at.replace(tzinfo=UTC).timestamp() if node.finished_at else None
        if node.state not in FINAL_STATES or ended is None or ended > request.enqueued_at:
            self._log(request, logging.INFO, "node is in %s again: kept", node.state)
            return outcomes.APPLIED
        self.store.delete_node(request.node_uuid)
        self._log(request, logging.INFO, "expired: node records deleted")
        return outcomes.APPLIED

    def _refused(
        self, request: Request, event: Event, node: NodeRecord | None, exc: Exception
    ) -> str | None:
        """The machine refused the event: record it and consume the request, except a
        ramdisk faster than the automatic `wait` (retried until `wait` lands)."""
        if event is Event.CONTINUE and node is not None and node.state == State.STARTING:
            self._log(request, logging.INFO, "ramdisk data before wait: later")
            return None
        message = getattr(exc, "message", str(exc))
        self._log(request, logging.WARNING, "refused: %s", message)
        if node is not None:
            self.store.reject(node.uuid, request.request_id, event, node.state, message)
        return outcomes.REFUSED

    def _commit(
        self,
        node: NodeRecord | None,
        request: Request,
        transition: Transition,
        *,
        request_id: str | None = None,
        reason: str | None = None,
    ) -> NodeRecord:
        """Compare-and-swap the node into the transition's target, with its columns."""
        if transition.target is State.ERROR and not (reason or transition.reason):
            reason = self.tasks.error_reason(request)
        change = change_for(
            transition,
            request.node_uuid,
            node,
            request_id or request.request_id,
            self.store.clock(),
            # Without a task the request is finished the moment it is applied.
            status=requests.APPLIED if self.tasks.has_work(transition.target) else requests.DONE,
            reason=reason,
        )
        node = self.store.apply(change, node)
        self._log(request, logging.INFO, "%s -> %s", transition.source, transition.target)
        if transition.target in FINAL_STATES and node.started_at and node.finished_at:
            seconds = (node.finished_at - node.started_at).total_seconds()
            self.metrics.introspection_ended(str(transition.target), seconds)
        return node

    def _run(self, node: NodeRecord, request: Request, transition: Transition) -> bool:
        """The task, then the follow-ups, then the request is done. A failing task sends
        the node to error instead (False)."""
        began = time.perf_counter()
        succeeded = True
        try:
            self.faults.task_delay(request.event)
            follow_ups = self.tasks.run(node, request, transition)
        except Exception as exc:
            self.metrics.task_duration(transition.target, time.perf_counter() - began)
            if isinstance(exc, errors.ServiceUnavailable) and exc.service:
                # A backend outage, not a verdict on the node: leave the request unacked
                # so it runs again (the process gives up on the backend meanwhile), and
                # say the task is known unfinished so even a strict event may rerun it.
                self._interrupted(request)
                raise
            # Our own errors (a processing error, Ironic's refusal, a lookup failure) are
            # one line; a stack only for a bug, or for anything with debug on.
            expected = isinstance(exc, errors.InspectorError)
            message = exc.message if expected else str(exc)
            self._log(
                request,
                logging.ERROR,
                "task failed: %s",
                redaction.shorten(message),
                exc_info=not expected or LOG.isEnabledFor(logging.DEBUG),
            )
            self._fail(node, request, f"{transition.target} failed: {message}")
            follow_ups = []
            succeeded = False
        else:
            self.metrics.task_duration(transition.target, time.perf_counter() - began)
            if request.event in STRICT_EVENTS:
                # From here a redelivery is deja vu; before, the task had not finished
                # and runs again (a worker killed mid-processing loses no introspection).
                self.store.mark_ran(request.request_id)
        self.faults.before_ack(request.event, request.request_id)
        for event in follow_ups:
            self._follow(request.follow_up(event))
        self.store.finish_request(request.request_id)
        return succeeded

    def _follow(self, follow_up: Request) -> None:
        """Apply a follow-up now, under the lock held, or enqueue it. A worker killed
        before it is applied leaves its parent unacknowledged: the parent is redelivered
        and its task runs again (or, strict, is deja vu), as before the follow-up."""
        outcome = self._apply(follow_up, follow_up=True)
        if outcome is None:
            self.queue.put(follow_up)
        else:
            self.metrics.transition(follow_up.event, outcome)

    def _interrupted(self, request: Request) -> None:
        self.metrics.transition(request.event, outcomes.INTERRUPTED)
        try:
            self.store.interrupt_request(request.request_id)
        except errors.InspectorError as exc:
            self._log(request, logging.WARNING, "cannot mark the task interrupted: %s", exc)

    def _fail(self, node: NodeRecord, request: Request, message: str) -> None:
        """The node goes to error; the error's own work (announcing the end to the PXE
        firewalls, when there is an announcer) is done and its request marked done."""
        current = self.store.get_node(node.uuid)
        transition = self.machine.advance(State(current.state), Event.ERROR)
        self._end(current, request, transition, request.follow_up(Event.ERROR), message)

    def _end(
        self,
        node: NodeRecord,
        request: Request,
        transition: Transition,
        end: Request,
        reason: str | None = None,
    ) -> None:
        """Commit request's transition into an end state as the request `end`, then the
        end's own work (the announcement to the PXE firewalls, with an announcer), after
        which `end` is done."""
        node = self._commit(node, request, transition, request_id=end.request_id, reason=reason)
        if self.tasks.has_work(transition.target):
            self.tasks.run(node, end, transition)
            self.store.finish_request(end.request_id)

    def _redelivered(
        self, request: Request, event: Event, seen: RequestRecord, node: NodeRecord | None
    ) -> str:
        """A request id seen before: done/rejected ones are consumed; an unfinished one
        lost its worker mid-way: its task runs again, except a strict event's whose
        task had finished (`ran`): that is deja vu, the node goes to error."""
        if seen.status not in requests.UNFINISHED:
            self._log(request, logging.INFO, "already %s: consumed", seen.status)
            return outcomes.DONE
        if node is None or node.version != seen.version:
            self._log(request, logging.INFO, "applied, and the node moved on since: consumed")
            self.store.finish_request(request.request_id)
            return outcomes.DONE
        if event not in STRICT_EVENTS or seen.status != requests.RAN:
            self._log(
                request,
                logging.INFO,
                "applied (by the API, or by a worker that died or lost a backend before "
                "its task finished): running its task",
            )
            transition = Transition(
                State(seen.source_state) if seen.source_state else None,
                event,
                State(node.state),
                None,
            )
            return outcomes.RESUMED if self._run(node, request, transition) else outcomes.FAILED
        self._log(request, logging.WARNING, "strict event seen again after its task ran: deja vu")
        if self.machine.can(State(node.state), event):
            transition = self.machine.advance(State(node.state), event)
            self._end(node, request, transition, request.follow_up("dejavu"))
        self.store.finish_request(request.request_id)
        return outcomes.DEJA_VU


def _is_event(name: str) -> bool:
    return name in Event._value2member_map_
