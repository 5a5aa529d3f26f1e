"""The at-least-once work queue of transition requests, on kombu (RabbitMQ, Redis, memory).

A delivery leaves the queue only when acked, so a worker dying mid-request means the
request is delivered again: handlers must be idempotent. It looks at a request's event
only to choose its lane (START_EVENTS); it never interprets requests otherwise.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable

import kombu.message

from inspector import deadlines
from inspector.broker.link import Link
from inspector.broker.links import Links
from inspector.broker.message import Envelope, MalformedRequest, Request
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.broker.transports import DEFAULT_TIMEOUTS, Timeouts
from inspector.errors import ServiceUnavailable
from inspector.machine import START_EVENTS

LOG = logging.getLogger(__name__)

#: Longest single wait on the broker inside get(), so that shutdown is seen within a
#: second. Each slice wakes the thread: 0.25 s cost an idle process of 8 threads 5 ms of
#: CPU a second, 1 s costs 1.6 ms.
POLL_SLICE = 1.0
#: Suffix of the queue that receives dead letters (one for both lanes).
DEAD_SUFFIX = ".dead"
#: Suffix of the start lane, the queue of machine.START_EVENTS (they wait there, so that
#: a batch of hundreds never queues ahead of the introspections under way, whose nodes
#: would otherwise time out); the others use the queue's name. Workers take turns.
START_SUFFIX = ".start"


class WorkQueue:
    """Put requests; get them as deliveries, which the getter acks, retries or dead-letters.

    Two lanes, `<name>` and `<name>.start` (see machine.START_EVENTS), are consumed together,
    fairly, with at most one unsettled delivery per thread across both.

    Each thread has its own broker connection, opened on first use; `close()` closes
    them all. Connection failures are retried `max_retries` times, `retry_interval`
    apart (waits on `shutdown`), then raise ServiceUnavailable; a put or a count also
    raises it once `timeouts.operation` is spent, so that an API answer never waits on a
    hung broker. On RabbitMQ, `tls` ([oslo_messaging_rabbit], broker.tls) says whether
    and how they use TLS.
    """

    def __init__(
        self,
        url: str,
        queue_name: str = "inspector",
        *,
        max_retries: int = 10,
        retry_interval: float = 2.0,
        shutdown: threading.Event | None = None,
        visibility_timeout: float = 300.0,
        clock: Callable[[], float] = time.time,
        tls: Tls = DEFAULT_TLS,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
    ) -> None:
        self.queue_name = queue_name
        self._budget = timeouts.operation
        self.start_queue_name = queue_name + START_SUFFIX
        self.dead_queue_name = queue_name + DEAD_SUFFIX
        self._shutdown = shutdown or threading.Event()
        self._clock = clock
        self._links = Links(
            url,
            queue_name,
            (queue_name, self.start_queue_name),
            attempts=max(1, max_retries),
            retry_interval=retry_interval,
            shutdown=self._shutdown,
            visibility_timeout=visibility_timeout,
            tls=tls,
            timeouts=timeouts,
        )

    def __repr__(self) -> str:
        return f"<WorkQueue {self._links}>"

    @property
    def is_single_process(self) -> bool:
        return self._links.transport.is_single_process

    def lane_of(self, request: Request) -> str:
        """The queue `request` waits on: the start lane or the main one."""
        return self.start_queue_name if request.event in START_EVENTS else self.queue_name

    def put(self, request: Request) -> None:
        """Durably enqueue `request` on its lane (on amqp: once the broker confirmed it)."""
        self._publish(self.lane_of(request), Envelope(request).to_json())

    def put_raw(self, body: str | bytes) -> None:
        """Enqueue a body as it is: to re-inject a dead letter, or to test bad input.

        It goes to its request's lane; a body that is no envelope, to the main lane.
        """
        try:
            lane = self.lane_of(Envelope.from_json(body).request)
        except MalformedRequest:
            lane = self.queue_name
        self._publish(lane, body)

    def get(self, timeout: float, *, starts: bool = True) -> Delivery | None:
        """The next due request, or None after about `timeout` seconds or on shutdown.

        With starts=False, from the main lane only (never a START_EVENTS request). A
        thread asks with the same `starts` every time (its consumer is made once).
        """
        lanes = None if starts else (self.queue_name,)
        deadline = time.monotonic() + timeout
        while not self._shutdown.is_set():
            remaining = deadline - time.monotonic()
            poll = min(remaining, POLL_SLICE)
            try:
                self._links.maintain()
                link, message = self._links.run(
                    "get from", functools.partial(_receive, timeout=poll, lanes=lanes), waits=True
                )
            except ServiceUnavailable:
                if self._shutdown.is_set():
                    return None
                raise
            if message is not None:
                return self._accept(link, message, deadline)
            if remaining <= 0:
                return None
        return None

    def depth(self) -> int | None:
        """Messages waiting in both lanes (delayed ones included, unacked ones not)."""
        counts = self._links.run(
            "count",
            lambda link: [link.count(lane) for lane in self._links.lanes],
            budget=self._call_budget(),
        )
        return None if None in counts else sum(c for c in counts if c is not None)

    def in_flight(self) -> int | None:
        """Requests delivered to a worker and not settled yet, of both lanes (those of a
        worker that died too, until they come back); None when the broker does not say
        (RabbitMQ keeps the count to itself; the in-process queue has none elsewhere)."""
        if not self._links.transport.has_visibility_timeout:
            return None
        return self._links.run(
            "count the unacknowledged of", lambda link: link.in_flight(), budget=self._call_budget()
        )

    def purge(self) -> int:
        """Drop every waiting message of both lanes; how many there were."""
        return self._links.run(
            "purge",
            lambda link: sum(link.purge(lane) for lane in self._links.lanes),
            budget=self._call_budget(),
        )

    def close(self) -> None:
        """Close every connection opened here; unsettled deliveries go back to the queue.

        Call it once the threads that use the queue stopped.
        """
        self._links.close()

    def _accept(
        self, link: Link, message: kombu.message.Message, deadline: float
    ) -> Delivery | None:
        body = message.body if isinstance(message.body, bytes) else message.body.encode()
        try:
            envelope = Envelope.from_json(body)
        except MalformedRequest as exc:
            return Delivery(self, link, message, body, request=None, error=exc.message)
        if envelope.not_before is not None and not envelope.is_due(self._clock()):
            # Not a hot loop: wait for it, but no longer than this get() may last.
            due_in = envelope.not_before - self._clock()
            self._shutdown.wait(max(0.0, min(due_in, deadline - time.monotonic())))
        if self._shutdown.is_set():
            self._put_back(link, message.requeue)
            return None
        if not envelope.is_due(self._clock()):
            # Unchanged, at the end of its lane: the due messages behind it get through.
            self._publish(self.lane_of(envelope.request), body)
            self._put_back(link, message.ack)
            return None
        return Delivery(self, link, message, body, request=envelope.request, error=None)

    def _put_back(self, link: Link, settle: Callable[[], object]) -> None:
        try:
            self._links.settle(link, settle)
        except ServiceUnavailable as exc:
            # Its connection is gone, so the broker delivers it again: nothing is lost.
            LOG.warning("%s: a message not handed out will be delivered again: %s", self, exc)

    def _call_budget(self) -> float | None:
        """How long a put or a count may take: within an API request, `[queue]
        operation_timeout` or what is left of the request's time limit when less
        (ServiceUnavailable once it has passed); elsewhere (a worker, a command) None:
        the retry budget (`max_retries` x `retry_interval`), each connect, read and write
        still bounded by its own timeout, so a worker rides out a broker restart."""
        if deadlines.remaining() is None:
            return None
        return deadlines.cap(self._budget, "queue")

    def _publish(self, name: str, body: str | bytes) -> None:
        action = "publish to" if name == self.queue_name else f"publish to {name} for"
        self._links.run(action, lambda link: link.publish(name, body), budget=self._call_budget())

    def _dead_letter_record(self, body: bytes, reason: str, lane: str) -> str:
        record = {
            "queue": self.queue_name,
            "lane": lane,
            "reason": reason,
            "body": body.decode("utf-8", "replace"),
            "dead_at": self._clock(),
        }
        return json.dumps(record, sort_keys=True)


class Delivery:
    """One received message; settle it exactly once, from the thread that got it."""

    def __init__(
        self,
        queue: WorkQueue,
        link: Link,
        message: kombu.message.Message,
        body: bytes,
        *,
        request: Request | None,
        error: str | None,
    ) -> None:
        #: The request, or None when the body was malformed (then `error` says why).
        self.request = request
        self.error = error
        #: The message body as received.
        self.body = body
        #: True when a consumer got this message before and did not ack it.
        self.redelivered = bool(message.delivery_info.get("redelivered"))
        self._queue = queue
        self._link = link
        self._message = message
        self._settled = False

    def __repr__(self) -> str:
        what = self.request or f"malformed: {self.error}"
        return f"<Delivery {what}>"

    def ack(self) -> None:
        """Consume: the request is done (or will never be)."""
        self._check()
        self._queue._links.settle(self._link, self._message.ack)
        self._settled = True

    def retry(self, delay: float, *, renewed: bool = False) -> None:
        """Leave it for later: a copy with attempt+1, due in `delay` seconds (`renewed`:
        its enqueued_at now, see Request.retry).

        The copy goes to the request's lane, published before the original is acked: a
        crash between the two duplicates the request, never loses it. A malformed
        message is dead-lettered.
        """
        self._check()
        if self.request is None:
            self.dead_letter(f"malformed, cannot be retried: {self.error}")
            return
        now = self._queue._clock()
        request = self.request.retry(enqueued_at=now if renewed else None)
        envelope = Envelope(request, not_before=now + delay)
        self._queue._publish(self._queue.lane_of(self.request), envelope.to_json())
        self._queue._links.settle(self._link, self._message.ack)
        self._settled = True

    def dead_letter(self, reason: str) -> None:
        """Move the raw body, with `reason`, to the queue `<name>.dead`, then ack."""
        self._check()
        queue = self._queue
        # The lane it came from: the default exchange routes on the queue's name.
        lane = (self._message.delivery_info or {}).get("routing_key") or queue.queue_name
        record = queue._dead_letter_record(self.body, reason, lane)
        queue._publish(queue.dead_queue_name, record)
        if self.request is None:
            LOG.warning(
                "Dead-lettered a malformed message to %s: %s", queue.dead_queue_name, reason
            )
        else:
            LOG.warning(
                "Dead-lettered request %s (node %s, event %s) to %s: %s",
                self.request.request_id,
                self.request.node_uuid,
                self.request.event,
                queue.dead_queue_name,
                reason,
            )
        queue._links.settle(self._link, self._message.ack)
        self._settled = True

    def _check(self) -> None:
        if self._settled:
            raise RuntimeError(f"{self!r} was already settled")
        if threading.current_thread() is not self._link.thread:
            # A kombu channel belongs to one thread; acking from another corrupts it.
            raise RuntimeError(f"{self!r} settled from another thread than the one that got it")


def _receive(
    link: Link, *, timeout: float, lanes: tuple[str, ...] | None
) -> tuple[Link, kombu.message.Message | None]:
    """A message from `link` (see Link.receive), with the link it came from."""
    return link, link.receive(timeout, lanes)
