"""One connection to the broker, its channel and its consumer: a Link, used by one thread.

A kombu connection and channel are not thread-safe, so each thread has its own Link
(inspector.broker.links keeps them); only its thread uses it, except to close it once
that thread is gone. A Link says when the broker dropped it while it sat idle.
"""

import collections
import contextlib
import logging
import select
import threading
from collections.abc import Iterator
from typing import Any

import kombu
import kombu.message

from inspector.broker import transports
from inspector.broker.tls import DEFAULT_TLS, Tls

LOG = logging.getLogger(__name__)

#: At most this many messages are delivered to one channel (all its lanes) and not settled.
PREFETCH = 1
#: AMQP delivery mode of a message written to disk by the broker.
PERSISTENT = 2
#: Shortest wait on the broker: 0 would mean "block" to some transports.
MIN_POLL = 0.01


class Link:
    """A connection, its channel and, once the thread consumes, its consumer of every lane."""

    def __init__(
        self,
        url: str,
        transport: transports.Transport,
        lanes: tuple[str, ...],
        options: dict[str, Any],
        tls: Tls = DEFAULT_TLS,
        *,
        timeouts: transports.Timeouts = transports.DEFAULT_TIMEOUTS,
    ) -> None:
        self.transport = transport
        self.lanes = lanes
        self.thread = threading.current_thread()
        self.timeouts = timeouts
        self.connection = transports.connect(url, transport, options, tls, timeouts.connect)
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

    def open(self, within: float | None = None) -> None:
        """One connection attempt, in `within` seconds at most (else the connect timeout);
        raises the library's error when it fails."""
        if within is not None:
            # kombu declares it an int; it takes seconds as a float too.
            timeout = max(MIN_POLL, min(self.timeouts.connect, within))
            self.connection.connect_timeout = timeout  # type: ignore[assignment]

        self.connection.ensure_connection(max_retries=0, reraise_as_library_errors=False)
        # A channel: Redis pings the server here, so a dead server fails now.
        self._channel = self.connection.channel()
        self.is_open = True

    def is_stale(self) -> bool:
        """amqp: whether the broker closed or reset this idle connection (a restart).

        Nothing comes unasked on a connection that does not consume (no heartbeats are
        negotiated): something to read there is the broker's close, its end of file or a
        reset. Redis needs no look: redis-py replaces a dead pooled connection itself.
        """
        if not self.is_open or self._consumer is not None or not self.transport.is_amqp:
            return False
        sock = getattr(self._client(), "sock", None)
        if sock is None:
            return True
        pending = getattr(sock, "pending", None)  # TLS: bytes already decrypted
        try:
            return bool(pending and pending()) or bool(select.select([sock], [], [], 0)[0])
        except (OSError, ValueError):  # closed under us
            return True

    @contextlib.contextmanager
    def bounded(self, within: float | None) -> Iterator[None]:
        """amqp: every read and write of the block waits `within` seconds at most (and
        never more than the socket timeout); Redis keeps its socket timeout."""
        transport = getattr(self._client(), "transport", None)
        if within is None or not self.transport.is_amqp or transport is None:
            yield
            return
        with transport.having_timeout(max(MIN_POLL, min(self.timeouts.socket, within))):
            yield

    def _client(self) -> Any:
        """The library's own connection (py-amqp's, redis's), None before it is made.
        Not kombu's `connection` property: that one would connect, with retries."""
        return getattr(self.connection, "_connection", None)

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
