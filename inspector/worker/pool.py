"""The worker pool: the only place with worker threads. Each thread runs the design's
loop: get (with a timeout) -> stop if shutting down -> handle one request -> again.

Threads never sleep: they wait on the queue or on the shutdown flag. With `record`, each
thread's time in the backends (inspector.backend_time) goes to it: the worker's metrics.
"""

import logging
import threading

from inspector import backend_time, errors, redaction
from inspector.broker import Delivery, Queue
from inspector.lifecycle import Lifecycle, Outages
from inspector.worker.delivery import backoff, context_of
from inspector.worker.handler import Handler

LOG = logging.getLogger(__name__)


#: Backends whose clients retry with their own policy before raising ServiceUnavailable.
SELF_RETRYING = frozenset({"Ironic", "queue"})


def takes_starts(number: int) -> bool:
    """Whether thread `number` also takes requests that start introspections. Half the
    threads (the even ones, so at least one) take both lanes in turns, the others only
    the main lane: each start makes three main-lane requests (wait, continue, finish),
    so threads that all alternated per message would leave the introspections under
    way further behind with every start, and finish them only once starts ran out."""
    return number % 2 == 0


class Pool:
    def __init__(
        self,
        queue: Queue,
        handler: Handler,
        lifecycle: Lifecycle,
        *,
        size: int,
        get_timeout: float,
        outages: Outages | None = None,
        record: backend_time.Record | None = None,
    ) -> None:
        self.queue = queue
        self.handler = handler
        self.lifecycle = lifecycle
        self.size = size
        self.get_timeout = get_timeout
        self.outages = outages or Outages(lifecycle, {})
        self.record = record
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for number in range(self.size):
            thread = threading.Thread(
                target=self._work,
                args=(takes_starts(number),),
                name=f"worker-{number}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        LOG.info("Worker pool of %d threads started", self.size)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the threads to finish what they hold; True when all have."""
        for thread in self._threads:
            thread.join(timeout)
        return not any(thread.is_alive() for thread in self._threads)

    def _work(self, starts: bool) -> None:
        with backend_time.recorded(self.record):
            while not self.lifecycle.shutdown.is_set():
                try:
                    self.step(starts=starts)
                except errors.InspectorError as exc:
                    self.outages.give_up("queue", exc.message)

    def step(self, *, starts: bool = True) -> bool:
        """One pass of the loop; False when the queue had nothing within the timeout.
        starts=False: only requests that do not start an introspection (takes_starts)."""
        delivery = self.queue.get(self.get_timeout, starts=starts)
        if delivery is None:
            return False
        if self.lifecycle.shutdown.is_set():
            delivery.retry(0)  # back on the queue for another process
            return True
        with context_of(delivery.request):  # this method's lines show the request too
            self._settle(delivery)
        return True

    def _settle(self, delivery: Delivery) -> None:
        """Handle the delivery; put it back on the queue when that failed."""
        try:
            self.handler.handle(delivery)
        except errors.ServiceUnavailable as exc:
            # A backend is down: the request goes back untouched (a committed state
            # change is recognised next time). Clients that retry on their own (Ironic,
            # the queue) have already spent their retries; the others have a budget.
            attempt = delivery.request.attempt if delivery.request else 0
            delivery.retry(backoff(attempt))
            if self.lifecycle.shutdown.is_set():
                return
            service = exc.service or "a backend"
            if service in SELF_RETRYING:
                self.outages.give_up(service, exc.message)
            else:
                self.outages.failed(service, exc.message)
                self.lifecycle.wait(self.outages.interval(service))
        except Exception as exc:
            # Store or DLM trouble (or a bug) mid-step: nothing was acknowledged, so the
            # request is retried; a committed state change is recognised next time, and
            # a request that keeps failing is dead-lettered after the maximum attempts.
            request = delivery.request
            where = (
                ""
                if request is None
                else f"[node {request.node_uuid} req {request.request_id} {request.event}] "
            )
            if isinstance(exc, errors.InspectorError):  # one line; a stack with debug on
                LOG.warning(
                    "%sRequest not applied (%s): retrying later",
                    where,
                    redaction.shorten(exc.message),
                    exc_info=LOG.isEnabledFor(logging.DEBUG),
                )
            else:
                LOG.exception("%sRequest not applied: retrying later", where)
            attempt = request.attempt if request else 0
            delivery.retry(backoff(attempt))
