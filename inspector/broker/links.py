"""The Links of one queue and its lanes: one Link per thread, opened lazily, and the
policy that retries an operation on them (reconnect at once after a restart, back off
after other failures, give up after the attempts or the time allowed). Each operation
and each settling is one call to the queue for inspector.backend_time, except the wait
for a delivery.
"""

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from inspector import backend_time
from inspector.broker import transports
from inspector.broker.link import Link
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import ServiceUnavailable

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between two looks for links of dead threads (their deliveries go back).
REAP_INTERVAL = 1.0
#: Longest pause between two Redis sweeps for messages unacked past the visibility timeout.
MAX_SWEEP_INTERVAL = 10.0


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
        timeouts: transports.Timeouts = transports.DEFAULT_TIMEOUTS,
    ) -> None:
        self.url = url
        self.queue_name = queue_name
        self.lanes = lanes
        self.transport = transports.select(url)
        # Its files are checked now: a missing one stops the start, not each connection.
        tls.kombu_ssl(url)
        self._tls = tls
        self.timeouts = timeouts
        self._options = self.transport.options(queue_name, visibility_timeout, timeouts)
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

    def run(
        self,
        action: str,
        operation: Callable[[Link], T],
        *,
        budget: float | None = None,
        waits: bool = False,
    ) -> T:
        """`operation` on this thread's link, reconnecting after connection errors.

        A pooled link that turns out dead (the broker restarted since it was last used)
        is replaced at once, not after `retry_interval`: only failures of a new
        connection count as attempts. With `budget`, the whole call, its reads, writes
        and reconnections included, fails within about that many seconds. `waits`: it
        waits for a message (idle time, not timed as a call to the queue).
        """
        with contextlib.nullcontext() if waits else backend_time.timing(backend_time.QUEUE):
            return self._retried(action, operation, budget)

    def _retried(self, action: str, operation: Callable[[Link], T], budget: float | None) -> T:
        deadline = None if budget is None else time.monotonic() + budget
        failures = 0
        while True:
            link = self._link()
            pooled = link.is_open
            try:
                return self._attempt(link, operation, deadline)
            except link.recoverable_errors as exc:
                self._abandon(link)
                if pooled and (deadline is None or time.monotonic() < deadline):
                    LOG.info("%s: connection lost (%s), reconnecting at once", self, exc)
                    continue
                failures += 1
                self._pause(action, exc, failures, deadline)
            except link.library_errors as exc:
                self._abandon(link)
                raise self.unavailable(action, exc) from exc

    def _attempt(self, link: Link, operation: Callable[[Link], T], deadline: float | None) -> T:
        within = None if deadline is None else deadline - time.monotonic()
        if link.is_stale():
            raise ConnectionResetError("closed by the broker while idle")
        if not link.is_open:
            link.open(within)
        with link.bounded(within):
            return operation(link)

    def _pause(
        self, action: str, exc: BaseException, failures: int, deadline: float | None
    ) -> None:
        """Wait before the next attempt; ServiceUnavailable when none is left (attempts,
        time, or shutdown)."""
        late = deadline is not None and time.monotonic() + self._retry_interval >= deadline
        if failures >= self._attempts or late:
            raise self.unavailable(action, exc, failures) from exc
        LOG.warning(
            "Cannot %s %s (attempt %d of %d): %s", action, self, failures, self._attempts, exc
        )
        if self._shutdown.wait(self._retry_interval):
            raise self.unavailable(action, "shutting down") from exc

    @backend_time.timed(backend_time.QUEUE)
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
            link = Link(
                self.url,
                self.transport,
                self.lanes,
                self._options,
                self._tls,
                timeouts=self.timeouts,
            )
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
