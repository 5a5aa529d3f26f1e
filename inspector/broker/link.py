"""Connections to the broker: one Link per thread, and the Links of one queue and its lanes.

A kombu connection and channel are not thread-safe, so each thread has its own Link;
only its thread uses it, except to close it once that thread is gone.
"""

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import kombu
import kombu.message

from inspector.broker import transports
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import ServiceUnavailable

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: At most this many messages are delivered to one channel (all its lanes) and not settled.
PREFETCH = 1
#: AMQP delivery mode of a message written to disk by the broker.
PERSISTENT = 2
#: Shortest wait on the broker: 0 would mean "block" to some transports.
MIN_POLL = 0.01
#: Seconds between two looks for links of dead threads (their deliveries go back).
REAP_INTERVAL = 1.0
#: Longest pause between two Redis sweeps for messages unacked past the visibility timeout.
MAX_SWEEP_INTERVAL = 10.0


class Link:
    """A connection, its channel and, once the thread consumes, its consumer of every lane."""

    def __init__(
        self,
        url: str,
        transport: transports.Transport,
        lanes: tuple[str, ...],
        options: dict[str, Any],
        tls: Tls = DEFAULT_TLS,
    ) -> None:
        self.transport = transport
        self.lanes = lanes
        self.thread = threading.current_thread()
        self.connection = transports.connect(url, transport, options, tls)
        self.recoverable_errors = transports.recoverable_errors(self.connection)
        self.library_errors = transports.library_errors(self.connection)
        self.is_open = False
        self.is_closed = False
        self._channel: Any = None
        self._consumer: kombu.Consumer | None = None
        self._consuming: tuple[str, ...] = ()
        self._producer: kombu.Producer | None = None
        self._declared: set[str] = set()
        # Messages the broker pushed to us (kombu callback) and get() did not return yet.
        self._received: collections.deque[kombu.message.Message] = collections.deque()

    def open(self) -> None:
        """One connection attempt; raises the library's error when it fails."""
        self.connection.ensure_connection(max_retries=0, reraise_as_library_errors=False)
        # A channel: Redis pings the server here, so a dead server fails now.
        self._channel = self.connection.channel()
        self.is_open = True

    def queue(self, name: str) -> kombu.Queue:
        return kombu.Queue(name, routing_key=name, durable=True, auto_delete=False)

    def declare(self, name: str) -> tuple[str, int, int]:
        """Declare the durable queue (idempotent); (name, messages ready, consumers)."""
        result = self.queue(name).bind(self._channel).queue_declare()
        self._declared.add(name)
        return result

    def count(self, name: str) -> int | None:
        """Messages ready in queue `name`; None when the transport does not say."""
        count = getattr(self.declare(name), "message_count", None)
        return None if count is None else int(count)

    def in_flight(self) -> int | None:
        """Redis: messages delivered to a consumer and not settled yet (kombu keeps them
        aside, in the hash `<queue>.unacked`, until acked or restored); None elsewhere."""
        if not self.transport.has_visibility_timeout:
            return None
        with self._channel.conn_or_acquire() as client:
            return int(client.hlen(self._channel.unacked_key))

    def publish(self, name: str, body: str | bytes) -> None:
        if name not in self._declared:
            self.declare(name)
        encoding = "binary" if isinstance(body, bytes) else "utf-8"
        if self._producer is None:
            # The default exchange routes on the queue name: nothing to declare or bind.
            self._producer = kombu.Producer(self._channel, auto_declare=False)
        # Persistent, and on amqp publisher-confirmed (confirm_publish): once this
        # returns, the broker has the message on disk.
        self._producer.publish(
            body,
            routing_key=name,
            delivery_mode=PERSISTENT,
            content_type="application/json",
            content_encoding=encoding,
            retry=False,
        )

    def receive(
        self, timeout: float, lanes: tuple[str, ...] | None = None
    ) -> kombu.message.Message | None:
        """The next message of `lanes` (default: all), waiting up to `timeout` seconds for
        one; None if none came. A link consumes one set of lanes for good."""
        lanes = lanes or self.lanes
        if self._consumer is not None and lanes != self._consuming:
            raise ValueError(f"this link consumes {self._consuming}, not {lanes}")
        if self._consumer is None:
            self._consuming = lanes
            self._consumer = kombu.Consumer(
                self._channel,
                queues=[self.queue(name) for name in lanes],
                on_message=self._received.append,
                no_ack=False,
                auto_declare=True,
            )
            # One unsettled message per channel, across the lanes: a worker does not hoard
            # messages others could take. RabbitMQ needs global QoS for that (else the
            # limit is per consumer, one per lane; quorum queues refuse it, ours are
            # classic); kombu's virtual transports (Redis, memory) always count per
            # channel. Lanes are taken in turns: round robin there, at random on RabbitMQ.
            self._consumer.qos(prefetch_count=PREFETCH, apply_global=True)
            self._consumer.consume()
        if not self._received:
            try:
                self.connection.drain_events(timeout=max(timeout, MIN_POLL))
            except TimeoutError:
                pass
        return self._received.popleft() if self._received else None

    def purge(self, name: str) -> int:
        self.declare(name)
        return int(self._channel.queue_purge(name) or 0)

    def restore_visible(self) -> None:
        """Redis: put back the messages left unacked past the visibility timeout.

        kombu runs this only on an idle poll and only every tenth time; a busy consumer
        would never run it, so the queue runs it on its own schedule. A Redis lock
        makes concurrent sweeps by several processes harmless.
        """
        if self._channel is not None and self.transport.has_visibility_timeout:
            self._channel.qos.restore_visible(num=None, interval=1)

    def close(self) -> None:
        """Close; the messages delivered here and not settled go back to the queue."""
        if self.is_closed:
            return
        self.is_closed = True
        try:
            if self._channel is not None and not self.transport.restores_on_close:
                # Prefetched but never handed out: unacked too, so restored below.
                self._received.clear()
                # kombu's memory channel never restores them on close (do_restore is
                # False); Redis's does, and restoring first does no harm there.
                self._channel.qos.restore_unacked()
        finally:
            self.connection.release()

    def abandon(self) -> None:
        """Forget a broken connection without talking to the broker again.

        Its unacked messages come back from the broker (amqp) or the sweep (Redis).
        """
        self.is_closed = True
        self._received.clear()
        self.connection.collect()


class Links:
    """The links one queue opened, one per thread, opened lazily, retried when they fail.

    Each link consumes every one of `lanes`; `queue_name` names them all in messages.
    """

    def __init__(
        self,
        url: str,
        queue_name: str,
        lanes: tuple[str, ...],
        *,
        attempts: int,
        retry_interval: float,
        shutdown: threading.Event,
        visibility_timeout: float,
        tls: Tls = DEFAULT_TLS,
    ) -> None:
        self.url = url
        self.queue_name = queue_name
        self.lanes = lanes
        self.transport = transports.select(url)
        # Its files are checked now: a missing one stops the start, not each connection.
        tls.kombu_ssl(url)
        self._tls = tls
        self._options = self.transport.options(queue_name, visibility_timeout)
        self._attempts = attempts
        self._retry_interval = retry_interval
        self._shutdown = shutdown
        self._local = threading.local()
        self._lock = threading.Lock()
        self._links: list[Link] = []
        self._closed = False
        self._sweep_interval = min(visibility_timeout / 2, MAX_SWEEP_INTERVAL)
        self._next_reap = self._next_sweep = time.monotonic()

    def __str__(self) -> str:
        return f"{self.transport.name} queue {self.queue_name} at {transports.redact(self.url)}"

    def run(self, action: str, operation: Callable[[Link], T]) -> T:
        """`operation` on this thread's link, reconnecting after connection errors."""
        failures = 0
        while True:
            link = self._link()
            try:
                if not link.is_open:
                    link.open()
                return operation(link)
            except link.recoverable_errors as exc:
                self._abandon(link)
                failures += 1
                if failures >= self._attempts:
                    raise self.unavailable(action, exc, failures) from exc
                LOG.warning(
                    "Cannot %s %s (attempt %d of %d): %s",
                    action,
                    self,
                    failures,
                    self._attempts,
                    exc,
                )
                if self._shutdown.wait(self._retry_interval):
                    raise self.unavailable(action, "shutting down") from exc
            except link.library_errors as exc:
                self._abandon(link)
                raise self.unavailable(action, exc) from exc

    def settle(self, link: Link, settle: Callable[[], object]) -> None:
        """Ack or requeue on the link that received the message: it cannot be retried."""
        if link.is_closed:
            raise self.unavailable("acknowledge on", "the connection that received it is gone")
        try:
            settle()
        except link.library_errors as exc:
            self._abandon(link)
            raise self.unavailable("acknowledge on", exc) from exc

    def maintain(self) -> None:
        """Give back what dead threads held; on Redis, sweep for expired unacked messages."""
        now = time.monotonic()
        dead: list[Link] = []
        sweep = False
        with self._lock:
            if now >= self._next_reap:
                self._next_reap = now + REAP_INTERVAL
                dead = [link for link in self._links if not link.thread.is_alive()]
                self._links = [link for link in self._links if link not in dead]
            if self.transport.has_visibility_timeout and now >= self._next_sweep:
                self._next_sweep = now + self._sweep_interval
                sweep = True
        for link in dead:
            LOG.debug("%s: closing the connection of finished %s", self, link.thread)
            self._close(link)
        if sweep:
            self.run("restore expired messages of", lambda link: link.restore_visible())

    def close(self) -> None:
        with self._lock:
            links, self._links = self._links, []
            self._closed = True
        for link in links:
            self._close(link)

    def unavailable(
        self, action: str, error: object, attempts: int | None = None
    ) -> ServiceUnavailable:
        tried = f" after {attempts} attempts" if attempts and attempts > 1 else ""
        return ServiceUnavailable(
            f"queue service {self.transport.name} at {transports.redact(self.url)}: "
            f"cannot {action} queue {self.queue_name}{tried}: {error}",
            service="queue",
        )

    def _link(self) -> Link:
        link: Link | None = getattr(self._local, "link", None)
        if link is not None and not link.is_closed:
            return link
        with self._lock:
            if self._closed:
                raise self.unavailable("use", "the queue is closed")
            link = Link(self.url, self.transport, self.lanes, self._options, self._tls)
            self._links.append(link)
        self._local.link = link
        return link

    def _abandon(self, link: Link) -> None:
        with self._lock:
            if link in self._links:
                self._links.remove(link)
        link.abandon()

    def _close(self, link: Link) -> None:
        try:
            link.close()
        except link.library_errors as exc:
            LOG.warning("%s: closing a connection failed: %s", self, exc)
