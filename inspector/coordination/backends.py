"""The two coordinator backends: tooz (any DLM it supports) and in-process (memory://).

Owns the tooz connection and its retries; no tooz exception leaves this module.
"""

import contextlib
import importlib
import importlib.util
import logging
import threading
import urllib.parse
from collections.abc import Iterator

from redis import backoff as redis_backoff
from redis import exceptions as redis_exceptions
from redis import retry as redis_retry
from tooz import coordination as tooz_coordination
from tooz.drivers import redis as tooz_redis

from inspector.errors import ConfigError, ServiceUnavailable

LOG = logging.getLogger(__name__)

#: URL schemes that only work inside one process.
SINGLE_PROCESS_SCHEMES = frozenset({"memory"})
#: URL schemes that only work on one host (several processes, one machine). memcached
#: reaches other hosts, but it is one unreplicated server whose locks live in a cache
#: (evicted when full, lost when it restarts): no HA, so one host only.
SINGLE_HOST_SCHEMES = frozenset({"memory", "file", "memcached"})
#: The URL options by which each tooz driver expires the locks and memberships of a
#: holder that stopped heart-beating, set from [coordination] lease_timeout unless the
#: URL sets them. ZooKeeper's is the session timeout, which the server bounds by its
#: minSessionTimeout and maxSessionTimeout (by default 2 and 20 ticks: 4 s and 40 s).
LEASE_OPTIONS: dict[str, tuple[str, ...]] = {
    "redis": ("lock_timeout", "membership_timeout"),
    "etcd3+http": ("lock_timeout", "membership_timeout"),
    "etcd3+https": ("lock_timeout", "membership_timeout"),
    "zookeeper": ("timeout",),
    "kazoo": ("timeout",),
    "memcached": ("lock_timeout", "membership_timeout"),
}
#: tooz drivers whose locks and memberships expire (see LEASE_OPTIONS).
EXPIRING_SCHEMES = frozenset(LEASE_OPTIONS)
#: Schemes whose drivers give what the service needs: non-blocking locks that expire,
#: whose holder can renew them and learn that it lost them, and groups. Not tooz's
#: ipc://, mysql://, postgresql:// or kubernetes://: none has groups.
SUPPORTED_SCHEMES = EXPIRING_SCHEMES | {"memory", "file"}
#: The client library of each optional tooz driver: (module, extra of our distribution).
CLIENT_LIBRARIES = {
    "etcd3+http": ("etcd3gw", "etcd"),
    "etcd3+https": ("etcd3gw", "etcd"),
    "zookeeper": ("kazoo", "zookeeper"),
    "kazoo": ("kazoo", "zookeeper"),
    "memcached": ("pymemcache", "memcached"),
}
#: memcached counts whole seconds from a clock that ticks once a second: a key set to
#: expire in n seconds may go after n - 1. One more second keeps it for the full lease.
MEMCACHED_EXPIRY_SLACK = 1
#: tooz's schemes for ZooKeeper (kazoo's client).
ZOOKEEPER_SCHEMES = frozenset({"zookeeper", "kazoo"})
#: Seconds a group call may take before it counts as an outage (kazoo queues requests
#: while it reconnects; the other drivers' clients time out on their own).
CALL_TIMEOUT = 10.0


def _client_errors() -> tuple[type[BaseException], ...]:
    """What a tooz call may raise when the DLM is unreachable: tooz wraps some client
    errors, and lets others through (those raised in its executor, e.g. by group calls;
    kazoo's lock recipe's)."""
    errors: list[type[BaseException]] = [
        tooz_coordination.ToozError,
        redis_exceptions.RedisError,
        OSError,
    ]
    for module, name in (
        ("kazoo.exceptions", "KazooException"),
        ("pymemcache.exceptions", "MemcacheError"),
        ("etcd3gw.exceptions", "Etcd3Exception"),
    ):
        with contextlib.suppress(ImportError):
            errors.append(getattr(importlib.import_module(module), name))
    return tuple(errors)


DLM_ERRORS = _client_errors()


def scheme_of(url: str) -> str:
    return url.split(":", 1)[0]


def unsupported(url: str) -> str | None:
    """Why [coordination] backend_url cannot serve as the DLM, or None when it can."""
    scheme = scheme_of(url)
    if scheme not in SUPPORTED_SCHEMES:
        return (
            f"[coordination] backend_url = {scheme}://... is not a DLM Inspector can use: "
            "its locks must expire and be renewable, and it must have groups; use "
            "redis://..., etcd3+http://..., zookeeper://... (memcached://... on one "
            "host, memory:// in one process)"
        )
    module, extra = CLIENT_LIBRARIES.get(scheme, (None, None))
    if module is not None and importlib.util.find_spec(module) is None:
        return (
            f"[coordination] backend_url = {scheme}://... needs the Python package "
            f"{module}: pip install 'ironic-ha-inspector[{extra}]'"
        )
    return None


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

    @staticmethod
    def acquire(lock) -> bool:
        """Take lock without waiting for it: True when taken."""
        return lock.acquire(blocking=False)

    def renew(self) -> bool:
        try:
            lost = self._lost()
        except Exception as exc:  # tooz or the client library: either way, not ours now
            LOG.warning("Lease %s lost: %s", self._name, exc)
            return False
        if lost:
            LOG.warning("Lease %s lost: %s", self._name, lost)
        return lost is None

    def _lost(self) -> str | None:
        """None while the lease is still ours; else why not ("": nothing to log)."""
        return None if self._lock.heartbeat() is not False else ""

    def release(self) -> None:
        try:
            if self._lock.release() is False:
                LOG.warning("Lease %s had expired before its release", self._name)
        except Exception as exc:
            LOG.warning("Cannot release lease %s (it will expire): %s", self._name, exc)


class _EtcdLease(_ToozLease):
    """etcd3gw: its lock's heartbeat says True even when the lease had expired."""

    def _lost(self) -> str | None:
        lock = self._lock
        with lock._exclusive_access:
            if not lock.acquired:
                return ""
            ttl = lock._lease.refresh()
        return "it had expired" if ttl <= 0 else None

    def release(self) -> None:
        super().release()
        # A lock whose release failed (it had expired) stays in the driver's list, whose
        # heartbeat would keep refreshing its dead lease.
        self._lock._coord._acquired_locks.discard(self._lock)


class _ZooKeeperLease(_ToozLease):
    """ZooKeeper: the lock is an ephemeral node, alive while our session is (kazoo
    keeps it alive). Renewing checks that our node is still there.

    kazoo's synchronous calls wait, without a time-out, for a lost connection to come
    back: taking and releasing run in a thread of their own, waited for CALL_TIMEOUT; a
    lock taken after that is released at once."""

    @staticmethod
    def acquire(lock) -> bool:
        return _bounded(
            lambda: lock.acquire(blocking=False),
            late=lambda taken: taken and lock.release(),
        )

    def _lost(self) -> str | None:
        recipe = self._lock._lock
        client = recipe.client
        if recipe.is_acquired and recipe.node is not None and client.connected:
            path = f"{recipe.path}/{recipe.node}"
            data, _ = client.get_async(path).get(timeout=CALL_TIMEOUT)
            if data == recipe.data:
                return None
        return "not connected, or its node is gone"

    def release(self) -> None:
        # Disconnected, the release waits in its thread for the connection to come back
        # (or the session to expire, which frees the lock too).
        connected = self._lock._client.connected
        try:
            _bounded(self._lock.release, CALL_TIMEOUT if connected else 0.0)
        except Exception as exc:
            LOG.warning("Cannot release lease %s yet (it will be): %s", self._name, exc)


class _MemcachedLease(_ToozLease):
    """memcached: tooz renews with `touch`, which extends the key whoever holds it now.
    Compare-and-set instead: the expiry is extended only while the key still holds our
    member id, untouched since we read it."""

    def _refresh(self) -> bool:
        lock = self._lock
        client, member = lock.coord.client, lock.coord._member_id
        value, cas = client.gets(lock.name)
        if value != member or not lock.acquired:
            return False
        return bool(client.cas(lock.name, value, cas, expire=lock.timeout, noreply=False))

    def _lost(self) -> str | None:
        return None if self._refresh() else "it had expired"

    def release(self) -> None:
        lock = self._lock
        try:
            # Extended first, so it cannot expire (and be taken) between check and delete.
            if self._refresh():
                lock.coord.client.delete(lock.name, noreply=False)
            else:
                LOG.warning("Lease %s had expired before its release", self._name)
        except Exception as exc:
            LOG.warning("Cannot release lease %s (it will expire): %s", self._name, exc)
        finally:
            with contextlib.suppress(ValueError):
                lock.coord._acquired_locks.remove(lock)


def _bounded(call, timeout: float = CALL_TIMEOUT, late=None):
    """call() in a thread of its own: its result, or TimeoutError (an OSError: a DLM
    outage) after timeout seconds. A call that returns later goes on to late(result)."""
    box: dict = {}
    guard = threading.Lock()
    finished = threading.Event()

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:
            box["error"] = exc
        with guard:
            finished.set()
            abandoned = box.get("abandoned", False)
        if abandoned and late is not None and "result" in box:
            with contextlib.suppress(Exception):
                late(box["result"])

    threading.Thread(target=run, name="dlm-call", daemon=True).start()
    finished.wait(timeout)
    with guard:
        if not finished.is_set():
            box["abandoned"] = True
            raise TimeoutError(f"no answer within {timeout:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


#: The lease of each driver whose lock's heartbeat cannot tell a lost lock.
_LEASES: dict[str, type[_ToozLease]] = {
    "etcd3+http": _EtcdLease,
    "etcd3+https": _EtcdLease,
    "zookeeper": _ZooKeeperLease,
    "kazoo": _ZooKeeperLease,
    "memcached": _MemcachedLease,
}


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
        problem = unsupported(url)
        if problem:
            raise ConfigError(problem)
        self.url = url
        self.member_id = member_id
        self.is_single_host = scheme_of(url) in SINGLE_HOST_SCHEMES
        self._lease_class = _LEASES.get(scheme_of(url), _ToozLease)
        #: kazoo's client, for ZooKeeper: its calls are only made while it is connected.
        self._kazoo = None
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
            if scheme_of(self.url) in ZOOKEEPER_SCHEMES:
                # kazoo pings on its own; tooz's heartbeat (a read) would only wait
                # forever while the connection is down.
                self._kazoo = driver._coord
                return
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
        kazoo, self._kazoo = self._kazoo, None
        if kazoo is not None and not kazoo.connected:
            # tooz would leave each group and wait forever for the connection: the
            # members' nodes go with the session anyway.
            driver._joined_groups.clear()
        self._stopped.set()
        if self._heart is not None:
            self._heart.join(self.lease_seconds)
            self._heart = None
        if driver is not None:
            try:
                driver.stop()
            except DLM_ERRORS as exc:
                LOG.warning("Error while leaving %s: %s", self._describe(), exc)
            _close_client(driver)

    def _connected(self):
        if self._driver is None:
            raise ServiceUnavailable(f"not connected to {self._describe()}", service="DLM")
        if self._kazoo is not None and not self._kazoo.connected:
            raise ServiceUnavailable(
                f"connection to {self._describe()} lost (reconnecting)", service="DLM"
            )
        return self._driver

    def try_lease(self, name: str) -> Lease | None:
        lock = self._connected().get_lock(name.encode())
        try:
            acquired = self._lease_class.acquire(lock)
        except DLM_ERRORS as exc:
            raise self._unavailable(f"lock {name}", exc) from exc
        return self._lease_class(lock, name) if acquired else None

    def join(self, group: str) -> None:
        driver, name = self._connected(), group.encode()
        try:
            try:
                driver.join_group(name).get(CALL_TIMEOUT)
            except tooz_coordination.GroupNotCreated:
                with contextlib.suppress(tooz_coordination.GroupAlreadyExist):
                    driver.create_group(name).get(CALL_TIMEOUT)
                driver.join_group(name).get(CALL_TIMEOUT)
        except tooz_coordination.MemberAlreadyExist:
            pass
        except DLM_ERRORS as exc:
            raise self._unavailable(f"join group {group}", exc) from exc

    def leave(self, group: str) -> None:
        try:
            self._connected().leave_group(group.encode()).get(CALL_TIMEOUT)
        except (tooz_coordination.MemberNotJoined, tooz_coordination.GroupNotCreated):
            pass
        except DLM_ERRORS as exc:
            raise self._unavailable(f"leave group {group}", exc) from exc

    def members(self, group: str) -> frozenset[str]:
        try:
            found = self._connected().get_members(group.encode()).get(CALL_TIMEOUT)
        except tooz_coordination.GroupNotCreated:
            return frozenset()
        except DLM_ERRORS as exc:
            raise self._unavailable(f"list group {group}", exc) from exc
        return frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in found)

    def _unavailable(self, what: str, exc: Exception) -> ServiceUnavailable:
        return ServiceUnavailable(f"cannot {what} in {self._describe()}: {exc}", service="DLM")


def _close_client(driver) -> None:
    """Free the sockets that tooz's stop() leaves open: kazoo's (it stops the client
    without closing it) and etcd3gw's HTTP session."""
    kazoo = getattr(driver, "_coord", None)
    if kazoo is not None and hasattr(kazoo, "close"):
        with contextlib.suppress(Exception):
            kazoo.close()
    session = getattr(getattr(driver, "client", None), "session", None)
    if session is not None and hasattr(session, "close"):
        session.close()


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
    """url with its driver's lease options (LEASE_OPTIONS) set, unless it sets them."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme
    if scheme not in LEASE_OPTIONS:
        return url
    if scheme == "memcached":
        lease_seconds += MEMCACHED_EXPIRY_SLACK
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    present = {key for key, _ in query}
    for key in LEASE_OPTIONS[scheme]:
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
    """The coordinator for url (not started yet); ConfigError when url's DLM cannot
    serve (see `unsupported`)."""
    scheme = scheme_of(url)
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
