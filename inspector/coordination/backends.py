"""The two coordinator backends: tooz (any DLM it supports) and in-process (memory://).

Owns the tooz connection and its retries; no tooz exception leaves this module.
"""

import contextlib
import logging
import threading
from collections.abc import Iterator

from redis import backoff as redis_backoff
from redis import retry as redis_retry
from tooz import coordination as tooz_coordination
from tooz.drivers import redis as tooz_redis

from inspector.errors import ServiceUnavailable

LOG = logging.getLogger(__name__)

#: URL schemes that only work inside one process.
SINGLE_PROCESS_SCHEMES = frozenset({"memory"})
#: URL schemes that only work on one host (several processes, one machine).
SINGLE_HOST_SCHEMES = frozenset({"memory", "file", "ipc"})


class Coordinator:
    """What the workers need of a DLM: start, stop, and non-blocking named locks."""

    #: True when the locks only exclude threads of this process.
    is_single_process = False
    #: True when the locks only exclude processes of this host.
    is_single_host = False

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def try_lock(self, name: str) -> contextlib.AbstractContextManager[bool]:
        """Context manager yielding True when the lock is held (released on exit),
        False when someone else holds it. Never blocks waiting for the lock."""
        raise NotImplementedError


class LocalCoordinator(Coordinator):
    """memory://: locks shared by the threads of one process (`inspector all`)."""

    is_single_process = True
    is_single_host = True

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: set[str] = set()

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        with self._guard:
            acquired = name not in self._held
            self._held.add(name)
        try:
            yield acquired
        finally:
            if acquired:
                with self._guard:
                    self._held.discard(name)


class ToozCoordinator(Coordinator):
    """A tooz driver with heartbeats (which keep held locks alive) and connect retries."""

    def __init__(
        self,
        url: str,
        member_id: str,
        *,
        max_retries: int = 10,
        retry_interval: float = 2.0,
        shutdown: threading.Event | None = None,
    ) -> None:
        self.url = url
        self.member_id = member_id
        self.is_single_host = url.split(":", 1)[0] in SINGLE_HOST_SCHEMES
        self._max_retries = max_retries
        self._retry_interval = retry_interval
        self._shutdown = shutdown or threading.Event()
        self._driver = None

    def _describe(self) -> str:
        return f"the DLM at {self.url.split('@')[-1]}"

    def start(self) -> None:
        attempt = 0
        while True:
            try:
                driver = tooz_coordination.get_coordinator(self.url, self.member_id.encode())
                _fail_fast(driver)
                driver.start(start_heart=True)
            except tooz_coordination.ToozError as exc:
                attempt += 1
                if attempt > self._max_retries or self._shutdown.wait(self._retry_interval):
                    raise ServiceUnavailable(
                        f"cannot connect to {self._describe()}: {exc}"
                    ) from exc
                LOG.warning("Cannot connect to %s (attempt %d): %s", self._describe(), attempt, exc)
                continue
            self._driver = driver
            return

    def stop(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            try:
                driver.stop()
            except tooz_coordination.ToozError as exc:
                LOG.warning("Error while leaving %s: %s", self._describe(), exc)

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        if self._driver is None:
            raise ServiceUnavailable(f"not connected to {self._describe()}")
        lock = self._driver.get_lock(name.encode())
        try:
            acquired = lock.acquire(blocking=False)
        except tooz_coordination.ToozError as exc:
            raise ServiceUnavailable(f"cannot lock {name} in {self._describe()}: {exc}") from exc
        try:
            yield bool(acquired)
        finally:
            if acquired:
                self._release(lock, name)

    def _release(self, lock, name: str) -> None:
        try:
            if not lock.release():
                LOG.warning("Lock %s had expired before its release", name)
        except tooz_coordination.ToozError as exc:
            LOG.warning("Cannot release lock %s (it will expire): %s", name, exc)


def _fail_fast(driver) -> None:
    """Make tooz's Redis client fail at once when Redis is down.

    redis-py >= 6 retries 3 times with exponential backoff inside every command, and
    tooz retries each call 15 times on top: about a minute per call before an outage
    surfaces. Our own retry policy ([coordination] max_retries, retry_interval) is the
    one that should decide, so the client gets no retries of its own.
    """
    if not isinstance(driver, tooz_redis.RedisDriver):
        return
    make_client = driver._make_client

    def make_client_without_retries(*args, **kwargs):
        client = make_client(*args, **kwargs)
        client.set_retry(redis_retry.Retry(redis_backoff.NoBackoff(), 0))
        return client

    driver._make_client = make_client_without_retries


def connect(
    url: str,
    member_id: str,
    *,
    max_retries: int = 10,
    retry_interval: float = 2.0,
    shutdown: threading.Event | None = None,
) -> Coordinator:
    """The coordinator for url (not started yet)."""
    scheme = url.split(":", 1)[0]
    if scheme in SINGLE_PROCESS_SCHEMES:
        return LocalCoordinator()
    return ToozCoordinator(
        url,
        member_id,
        max_retries=max_retries,
        retry_interval=retry_interval,
        shutdown=shutdown,
    )
