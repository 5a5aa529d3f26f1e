"""One request, one step: the design's worker loop body, written for redelivery.

`Handler.handle`, `_step` then `_loop` read top to bottom: check the request, lock its
node, load the node and the request's row, advance the machine and commit with the
version compare-and-swap (or pick up a transition committed before); then the loop: run
the task, take the follow-up as the next transition or enqueue it, mark each request
done; acknowledge, release. Metrics and fault injection wrap the task call and each
link of the loop (inspector.worker.middleware).

Most requests arrive committed: the API applies an operator's or a ramdisk's event
itself and enqueues the request for its task, which the worker runs on finding the
request's row `applied` on the node's current version. The same path picks up the
request of a worker that died mid-task; a strict event whose task finished gets only its
follow-up (its worker died before applying it), unless the node moved on since.
A follow-up whose transition runs no task of its own (`wait`, `finish`) is applied at
once, under the lock held; others are enqueued. Never blocks on a lock (busy: retry
later); never acknowledges before the follow-up is applied or enqueued.
"""

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

from inspector import errors, redaction
from inspector.broker import Delivery, Publisher
from inspector.broker.message import DELETE, EXPIRE, Request
from inspector.commit import commit
from inspector.coordination import DLM
from inspector.machine import (
    ENTRIES,
    STRICT_EVENTS,
    UNFINISHED,
    Event,
    Machine,
    RequestStatus,
    State,
    Transition,
)
from inspector.store import NodeRecord, RequestRecord, WorkerStore
from inspector.worker import metrics as outcomes
from inspector.worker import middleware, power, removal
from inspector.worker.checks import FAILED, PowerChecks
from inspector.worker.delivery import (
    MAX_ATTEMPTS,
    backoff,
    context_of,
    counted_event,
    lock_name,
    unusable,
)
from inspector.worker.faults import NO_FAULTS, Faults
from inspector.worker.metrics import NoMetrics, Recorder
from inspector.worker.tasks import Runner

LOG = logging.getLogger(__name__)


class _Link(NamedTuple):
    """A request the step's loop took, and how its link went."""

    request: Request
    outcome: str
    #: Committed done (its transition has no work): nothing left to finish.
    done_at_commit: bool


class Handler:
    def __init__(
        self,
        store: WorkerStore,
        coordinator: DLM,
        queue: Publisher,
        tasks: Runner,
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
        self.max_attempts = max_attempts
        self.delay = delay
        self.metrics = metrics or NoMetrics()
        self.checks = PowerChecks(store, queue, tasks, self.machine, end=self._end)
        # The task's metrics and the fault hooks wrap the task call and each link of
        # the loop (inspector.worker.middleware) instead of sitting in them.
        self._task = middleware.timed(self.metrics, middleware.slowed(faults, tasks.run))
        self._link = middleware.paused(faults, self._run_task)

    # ------------------------------------------------------------------ the step

    def handle(self, delivery: Delivery) -> None:
        """Settle one delivery: ack, retry later, or dead-letter. Store, queue and DLM
        outages propagate (the delivery is then neither acked nor lost)."""
        request = delivery.request
        with context_of(request):
            why = unusable(delivery, self.max_attempts)
            if why is not None or request is None:  # (unusable says why without one)
                delivery.dead_letter(why or "malformed request")
                self.metrics.transition(counted_event(request), outcomes.DEAD_LETTERED)
                return
            with self.coordinator.try_lock(lock_name(request.node_uuid)) as held:
                if not held:
                    self._log(request, logging.DEBUG, "node is locked by another worker: later")
                    self.metrics.lock_busy()
                    outcome = None
                elif request.event in (DELETE, EXPIRE):
                    outcome = removal.remove(self.store, request)
                elif request.event == power.CHECK:
                    outcome = self.checks.settle(request)
                else:
                    outcome = self._step(request)
                if outcome is None or outcome == outcomes.DEFERRED:
                    renewed = outcome is not None
                    delivery.retry(self.delay(request.attempt), renewed=renewed)
                else:
                    delivery.ack()
            # The lock is released only now: after the acknowledgement.
            self.metrics.transition(request.event, outcome or outcomes.RETRIED)

    def _step(self, request: Request) -> str | None:
        """Apply an event under its node's lock; how it went (an outcome of
        inspector.worker.metrics), None for "not yet, retry later"."""
        event = Event(request.event)
        node, seen = self.store.load(request.node_uuid, request.request_id)
        if seen is not None:
            # Committed before: by the API (the usual case), or by a worker that died.
            return self._committed(request, event, seen, node)
        state = None if node is None else State(node.state)
        if node is None and not self.machine.can(None, event):
            self._log(request, logging.INFO, "node not in the store (yet): later")
            return None
        try:
            transition = self.machine.advance(state, event)
        except errors.InvalidTransition as exc:
            return self._refused(request, event, node, exc)
        node = self._commit(request, node, transition)
        return None if node is None else self._loop(node, request, transition)

    def _loop(
        self, node: NodeRecord, request: Request, transition: Transition, *, ran: bool = False
    ) -> str:
        """From a committed transition to its request done, one link a turn: its task
        (none when it already `ran`), then the next transition: its follow-up, taken
        here under the lock held when it runs no task or a quick one, else enqueued; a
        failed task's is `error`, committed by the link. Then each request is done, the
        last first: a request is done only once all it led to is."""
        links: list[_Link] = []
        while True:
            if not (ran or self.tasks.has_work(transition)):
                links.append(_Link(request, outcomes.APPLIED, done_at_commit=True))
                break
            outcome = self._link(node, request, transition, ran)
            links.append(_Link(request, outcome, done_at_commit=False))
            taken = self._follow(request, transition) if outcome == outcomes.APPLIED else None
            if taken is None:
                break
            request, node, transition = taken
            ran = False
        for link in reversed(links):
            if not link.done_at_commit:
                self.store.finish_request(link.request.request_id)
            if link is not links[0]:  # the first, the delivery's: counted by handle
                self.metrics.transition(link.request.event, link.outcome)
        return links[0].outcome

    # ------------------------------------------------------------------ its parts

    def _commit(
        self,
        request: Request,
        node: NodeRecord | None,
        transition: Transition,
        *,
        request_id: str | None = None,
        reason: str | None = None,
    ) -> NodeRecord | None:
        """Compare-and-swap the node into the transition's target; None when another
        writer moved it first (the request is retried later)."""
        if transition.target is State.ERROR and not (reason or transition.reason):
            reason = self.tasks.error_reason(request)
        # Without work the request is finished the moment it is committed.
        has_work = self.tasks.has_work(transition)
        try:
            node = commit(
                self.store,
                request.node_uuid,
                node,
                transition,
                request_id or request.request_id,
                status=RequestStatus.APPLIED if has_work else RequestStatus.DONE,
                reason=reason,
            )
        except (errors.NodeBusy, errors.Conflict) as exc:
            self._log(request, logging.INFO, "lost a race (%s): later", exc.message)
            return None
        if transition.effects.ends and node.started_at and node.finished_at:
            seconds = (node.finished_at - node.started_at).total_seconds()
            self.metrics.introspection_ended(str(transition.target), seconds)
        return node

    def _run_task(
        self, node: NodeRecord, request: Request, transition: Transition, ran: bool
    ) -> str:
        """A link of the loop (`self._link`: the fault pause after it): the committed
        transition's task, how it went recorded: a strict event's marked ran, a failed
        task's node sent to error."""
        if ran:
            return outcomes.APPLIED
        try:
            check = self._task(node, request, transition)
        except Exception as exc:
            self._task_failed(node, request, transition, exc)
            return outcomes.FAILED
        if check is not None:  # before the task is marked done or ran: a redelivery puts it
            self.queue.put(check)
        if request.event in STRICT_EVENTS:
            # From here a redelivery only applies the follow-up; before, the task had
            # not finished and runs again (a worker killed mid-processing loses no
            # introspection).
            self.store.mark_ran(request.request_id)
        return outcomes.APPLIED

    def _follow(
        self, request: Request, transition: Transition
    ) -> tuple[Request, NodeRecord, Transition] | None:
        """The follow-up of a task that ran, committed as the next transition when it
        runs no task of its own or a quick one; else, or when it cannot be applied now,
        enqueued (the worker that takes it settles it): None. A worker killed before
        this leaves its parent unacked: the parent is redelivered and its task runs
        again (or, strict and marked ran, only this follow-up is applied then)."""
        if transition.follow_up is None:
            return None
        follow_up = request.follow_up(transition.follow_up)
        event = Event(follow_up.event)
        node, seen = self.store.load(follow_up.node_uuid, follow_up.request_id)
        state = None if node is None else State(node.state)
        if seen is None and node is not None and self.machine.can(state, event):
            following = self.machine.advance(state, event)
            if following.task is None or following.task.is_quick:
                committed = self._commit(follow_up, node, following)
                if committed is not None:
                    return follow_up, committed, following
        self.queue.put(follow_up)
        return None

    def _committed(
        self, request: Request, event: Event, seen: RequestRecord, node: NodeRecord | None
    ) -> str:
        """A request whose transition was committed before. Done or rejected: consumed.
        Unfinished but the node moved on since: consumed. Unfinished on the node's
        current version (every state change moves it: the node is in the request's
        target): its task runs (again), except a strict event's whose task had finished
        (`ran`): its follow-up only, as `_loop` would have applied it after the task."""
        if seen.status not in UNFINISHED:
            self._log(request, logging.INFO, "already %s: consumed", seen.status)
            return outcomes.DONE
        if node is None or node.version != seen.version:
            self._log(request, logging.INFO, "applied, and the node moved on since: consumed")
            self.store.finish_request(request.request_id)
            return outcomes.DONE
        source = State(seen.source_state) if seen.source_state else None
        transition = self.machine.resume(source, event, State(node.state))
        if seen.status == RequestStatus.RAN:
            # Its worker died between the end of the task and the follow-up: the task's
            # work is done and recorded, and nothing moved the node since.
            why = "its task already ran, its worker died before the follow-up"
            self._log(request, logging.INFO, "%s: applying %s now", why, transition.follow_up)
            self._loop(node, request, transition, ran=True)
            return outcomes.RESUMED
        applied = "applied before (by the API, or by a worker that died)"
        if not self.tasks.has_work(transition):
            self._log(request, logging.INFO, "%s, with no task to run: done", applied)
            self.store.finish_request(request.request_id)
            return outcomes.RESUMED
        self._log(request, logging.INFO, "%s: running its %s task now", applied, transition.task)
        ran = self._loop(node, request, transition) == outcomes.APPLIED
        return outcomes.RESUMED if ran else outcomes.FAILED

    def _task_failed(
        self, node: NodeRecord, request: Request, transition: Transition, exc: Exception
    ) -> None:
        """A backend outage leaves the request for another attempt (raised on); any
        other failure is the node's: it goes to error with the message."""
        if middleware.is_outage(exc):
            # Not a verdict on the node: the request stays unacked and runs again; marked
            # interrupted so that even a strict event's task may rerun.
            try:
                self.store.interrupt_request(request.request_id)
            except errors.InspectorError as error:
                self._log(request, logging.WARNING, "cannot mark the task interrupted: %s", error)
            raise exc
        # Our own errors are one line; a stack only for a bug, or for anything with debug.
        expected = isinstance(exc, errors.InspectorError)
        message = exc.message if isinstance(exc, errors.InspectorError) else str(exc)
        shown, stack = redaction.shorten(message), not expected or LOG.isEnabledFor(logging.DEBUG)
        self._log(request, logging.ERROR, "task failed: %s", shown, exc_info=stack)
        current = self.store.get_node(node.uuid)
        if not self.machine.can(State(current.state), Event.ERROR):
            # An end's own task (history, the announcement): the introspection is over.
            self._log(request, logging.WARNING, "the introspection stays %s", current.state)
            return
        failed = self.machine.advance(State(current.state), Event.ERROR)
        reason = f"{transition.target} failed: {message}"
        self._end(current, request, failed, request.follow_up(FAILED), reason)

    def _end(
        self,
        node: NodeRecord,
        request: Request,
        transition: Transition,
        end: Request,
        reason: str | None = None,
    ) -> None:
        """Commit request's transition into an end state as the request `end`, then the
        end's task (the announcement to the PXE firewalls, with an announcer), after
        which `end` is done. Under the lock held: nobody else moved the node."""
        ended = self._commit(request, node, transition, request_id=end.request_id, reason=reason)
        if ended is not None and self.tasks.has_work(transition):
            try:
                self.tasks.run(ended, end, transition)
            except Exception as exc:  # the node has ended all the same: logged
                if middleware.is_outage(exc):
                    raise
                self._log(end, logging.ERROR, "end task failed: %s", redaction.shorten(str(exc)))
            self.store.finish_request(end.request_id)

    def _refused(
        self, request: Request, event: Event, node: NodeRecord | None, exc: Exception
    ) -> str | None:
        """The machine refused the event: record it and consume the request, except one its
        node's state takes early (a ramdisk faster than `wait`: retried until it lands)."""
        entry = None if node is None else ENTRIES[State(node.state)]
        if entry is not None and event in entry.early:
            self._log(request, logging.INFO, "%s before %s: later", event, entry.follow_up)
            return None
        message = getattr(exc, "message", str(exc))
        self._log(request, logging.WARNING, "refused: %s", message)
        if node is not None:
            self.store.reject(node.uuid, request.request_id, event, node.state, message)
        return outcomes.REFUSED

    def _log(self, request: Request, level: int, message: str, *args: Any, **kwargs: Any) -> None:
        named = (request.node_uuid, request.request_id, request.event)
        LOG.log(level, "[node %s req %s %s] " + message, *named, *args, **kwargs)
