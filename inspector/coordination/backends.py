"""The two coordinator backends: tooz (any DLM it supports) and in-process (memory://).

Owns the tooz connection and its retries; no tooz exception leaves this module.
"""

import contextlib
import logging
import threading
import urllib.parse
from collections.abc import Iterator

from redis import backoff as redis_backoff
from redis import exceptions as redis_exceptions
from redis import retry as redis_retry
from tooz import coordination as tooz_coordination
from tooz.drivers import redis as tooz_redis

from inspector.errors import ServiceUnavailable

LOG = logging.getLogger(__name__)

#: URL schemes that only work inside one process.
SINGLE_PROCESS_SCHEMES = frozenset({"memory"})
#: URL schemes that only work on one host (several processes, one machine).
SINGLE_HOST_SCHEMES = frozenset({"memory", "file", "ipc"})
#: tooz drivers whose locks and memberships expire after `lock_timeout` and
#: `membership_timeout` URL options, which we set from [coordination] lease_timeout.
EXPIRING_SCHEMES = frozenset({"redis", "rediss", "etcd3", "etcd3+http", "etcd3+https"})


#: What a tooz call may raise when the DLM is unreachable: tooz wraps some client errors,
#: and lets others (those raised in its executor, e.g. by group calls) through.
DLM_ERRORS = (tooz_coordination.ToozError, redis_exceptions.RedisError, OSError)


class Lease:
    """A named lock held until released, or until its holder stops renewing it."""

    def renew(self) -> bool:
        """Extend the lease; False when it was lost (expired and maybe taken)."""
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError


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

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        """Context manager yielding True when the lock is held (released on exit),
        False when someone else holds it. Never blocks waiting for the lock."""
        lease = self.try_lease(name)
        try:
            yield lease is not None
        finally:
            if lease is not None:
                lease.release()

    #: Seconds after which a dead holder's leases and membership expire.
    lease_seconds: float = 0.0
    member_id: str = ""

    def try_lease(self, name: str) -> Lease | None:
        """The lease on name, or None when another member holds it. Never blocks."""
        raise NotImplementedError

    def join(self, group: str) -> None:
        """Become a member of group (created when missing); joining twice is harmless."""
        raise NotImplementedError

    def leave(self, group: str) -> None:
        """Leave group; leaving a group one is not in is harmless."""
        raise NotImplementedError

    def members(self, group: str) -> frozenset[str]:
        """The live members of group (dead ones drop out after lease_seconds)."""
        raise NotImplementedError


class LocalCoordinator(Coordinator):
    """memory://: locks shared by the threads of one process (`inspector all`)."""

    is_single_process = True
    is_single_host = True
    lease_seconds = float("inf")

    def __init__(self, member_id: str = "local") -> None:
        self.member_id = member_id
        self._guard = threading.Lock()
        self._held: set[str] = set()
        self._groups: dict[str, set[str]] = {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def try_lease(self, name: str) -> Lease | None:
        with self._guard:
            if name in self._held:
                return None
            self._held.add(name)
        return _LocalLease(self, name)

    def _drop(self, name: str) -> None:
        with self._guard:
            self._held.discard(name)

    def join(self, group: str) -> None:
        with self._guard:
            self._groups.setdefault(group, set()).add(self.member_id)

    def leave(self, group: str) -> None:
        with self._guard:
            self._groups.get(group, set()).discard(self.member_id)

    def members(self, group: str) -> frozenset[str]:
        with self._guard:
            return frozenset(self._groups.get(group, ()))


class _LocalLease(Lease):
    def __init__(self, owner: LocalCoordinator, name: str) -> None:
        self._owner = owner
        self._name = name
        self._released = False

    def renew(self) -> bool:
        return not self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._owner._drop(self._name)


class _ToozLease(Lease):
    def __init__(self, lock, name: str) -> None:
        self._lock = lock
        self._name = name

    def renew(self) -> bool:
        try:
            return self._lock.heartbeat() is not False
        except Exception as exc:  # tooz or the client library: either way, not ours now
            LOG.warning("Lease %s lost: %s", self._name, exc)
            return False

    def release(self) -> None:
        try:
            if self._lock.release() is False:
                LOG.warning("Lease %s had expired before its release", self._name)
        except Exception as exc:
            LOG.warning("Cannot release lease %s (it will expire): %s", self._name, exc)


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
        lease_seconds: int = 3,
    ) -> None:
        self.url = url
        self.member_id = member_id
        self.is_single_host = url.split(":", 1)[0] in SINGLE_HOST_SCHEMES
        self.lease_seconds = float(lease_seconds)
        self._driver_url = _with_lease(url, lease_seconds)
        self._stopped = threading.Event()
        self._heart: threading.Thread | None = None
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
                driver = tooz_coordination.get_coordinator(
                    self._driver_url, self.member_id.encode()
                )
                _fail_fast(driver)
                # Our own heartbeat, not tooz's: tooz's retries forever while the DLM
                # is down, and its stop() waits for it, so a process could never exit.
                driver.start(start_heart=False)
            except DLM_ERRORS as exc:
                attempt += 1
                if attempt > self._max_retries or self._shutdown.wait(self._retry_interval):
                    raise ServiceUnavailable(
                        f"cannot connect to {self._describe()}: {exc}", service="DLM"
                    ) from exc
                LOG.warning("Cannot connect to %s (attempt %d): %s", self._describe(), attempt, exc)
                continue
            self._driver = driver
            self._stopped.clear()
            self._heart = threading.Thread(
                target=self._beat, args=(driver,), name="dlm-heartbeat", daemon=True
            )
            self._heart.start()
            return

    def _beat(self, driver) -> None:
        """Renew the membership and every held lock, three times per lease, until stopped.
        Failures are only logged here: the elections and lock calls report outages."""
        while not self._stopped.wait(self.lease_seconds / 3):
            try:
                driver.heartbeat()
            except DLM_ERRORS as exc:
                LOG.debug("Heartbeat to %s failed: %s", self._describe(), exc)

    def stop(self) -> None:
        driver, self._driver = self._driver, None
        self._stopped.set()
        if self._heart is not None:
            self._heart.join(self.lease_seconds)
            self._heart = None
        if driver is not None:
            try:
                driver.stop()
            except DLM_ERRORS as exc:
                LOG.warning("Error while leaving %s: %s", self._describe(), exc)

    def _connected(self):
        if self._driver is None:
            raise ServiceUnavailable(f"not connected to {self._describe()}", service="DLM")
        return self._driver

    def try_lease(self, name: str) -> Lease | None:
        lock = self._connected().get_lock(name.encode())
        try:
            acquired = lock.acquire(blocking=False)
        except DLM_ERRORS as exc:
            raise self._unavailable(f"lock {name}", exc) from exc
        return _ToozLease(lock, name) if acquired else None

    def join(self, group: str) -> None:
        driver, name = self._connected(), group.encode()
        try:
            try:
                driver.join_group(name).get()
            except tooz_coordination.GroupNotCreated:
                with contextlib.suppress(tooz_coordination.GroupAlreadyExist):
                    driver.create_group(name).get()
                driver.join_group(name).get()
        except tooz_coordination.MemberAlreadyExist:
            pass
        except DLM_ERRORS as exc:
            raise self._unavailable(f"join group {group}", exc) from exc

    def leave(self, group: str) -> None:
        try:
            self._connected().leave_group(group.encode()).get()
        except (tooz_coordination.MemberNotJoined, tooz_coordination.GroupNotCreated):
            pass
        except DLM_ERRORS as exc:
            raise self._unavailable(f"leave group {group}", exc) from exc

    def members(self, group: str) -> frozenset[str]:
        try:
            found = self._connected().get_members(group.encode()).get()
        except tooz_coordination.GroupNotCreated:
            return frozenset()
        except DLM_ERRORS as exc:
            raise self._unavailable(f"list group {group}", exc) from exc
        return frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in found)

    def _unavailable(self, what: str, exc: Exception) -> ServiceUnavailable:
        return ServiceUnavailable(f"cannot {what} in {self._describe()}: {exc}", service="DLM")


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


def _with_lease(url: str, lease_seconds: int) -> str:
    """url with lock_timeout and membership_timeout set, unless it sets them itself."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in EXPIRING_SCHEMES:
        return url
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    present = {key for key, _ in query}
    for key in ("lock_timeout", "membership_timeout"):
        if key not in present:
            query.append((key, str(lease_seconds)))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def connect(
    url: str,
    member_id: str,
    *,
    max_retries: int = 10,
    retry_interval: float = 2.0,
    shutdown: threading.Event | None = None,
    lease_seconds: int = 3,
) -> Coordinator:
    """The coordinator for url (not started yet)."""
    scheme = url.split(":", 1)[0]
    if scheme in SINGLE_PROCESS_SCHEMES:
        return LocalCoordinator(member_id)
    return ToozCoordinator(
        url,
        member_id,
        max_retries=max_retries,
        retry_interval=retry_interval,
        shutdown=shutdown,
        lease_seconds=lease_seconds,
    )
