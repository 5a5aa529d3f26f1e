"""The tooz coordinator every tooz driver module specialises: the connection and its
retries, our own heartbeat, groups, and the lease (renew, release) shared by all;
no tooz exception leaves it. Each lock, group and lease call is one call to the DLM for
inspector.backend_time (`_call`, and the lease's `renew` and `release`).

A driver module sets the class attributes (its lease options, client library and
errors, its lease class) and overrides the few hooks where its driver differs.
"""

import contextlib
import importlib
import logging
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

from tooz import coordination as tooz_coordination
from tooz import locking as tooz_locking

from inspector import backend_time
from inspector.coordination.base import Coordinator, Lease
from inspector.errors import ServiceUnavailable

LOG = logging.getLogger(__name__)

_T = TypeVar("_T")
#: tooz's driver of a DLM.
Driver = tooz_coordination.CoordinationDriver

#: The share of [coordination] lease_timeout that one call to the DLM may wait for its
#: answer (its client's socket timeout; a group call's wait): a call on a DLM that
#: stopped answering fails before a lease it holds could expire, so no thread hangs
#: past its lease. A URL that sets the driver's own timeout options keeps them.
CALL_SHARE = 2 / 3


def call_timeout(lease_seconds: float) -> float:
    """Seconds one call to the DLM may wait, for leases of `lease_seconds`."""
    return lease_seconds * CALL_SHARE


class ToozLease(Lease):
    """A tooz lock: renewed by its heartbeat, which says False once the lock is lost.
    A driver whose heartbeat cannot tell overrides `_lost` (and `acquire`, `_release`)."""

    def __init__(self, lock: tooz_locking.Lock, name: str, timeout: float) -> None:
        self._lock = lock
        self._name = name
        #: Seconds one call may wait (see call_timeout).
        self._timeout = timeout

    @staticmethod
    def acquire(lock: tooz_locking.Lock, timeout: float) -> bool:
        """Take lock without waiting for it: True when taken. `timeout`: see
        call_timeout (the client's socket timeout bounds it here)."""
        return lock.acquire(blocking=False)

    @backend_time.timed(backend_time.DLM)
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
        # Every tooz driver's lock has heartbeat(); tooz's base Lock does not declare it.
        return None if self._lock.heartbeat() is not False else ""  # type: ignore[attr-defined]

    @backend_time.timed(backend_time.DLM)
    def release(self) -> None:
        self._release()

    def _release(self) -> None:
        """Release the lock; a failure is only logged (the lock expires)."""
        try:
            if self._lock.release() is False:
                LOG.warning("Lease %s had expired before its release", self._name)
        except Exception as exc:
            LOG.warning("Cannot release lease %s (it will expire): %s", self._name, exc)


def importable_errors(names: tuple[tuple[str, str], ...]) -> tuple[type[Exception], ...]:
    """The exception classes (module, class name) whose client library is installed."""
    found: list[type[Exception]] = []
    for module, name in names:
        with contextlib.suppress(ImportError):
            found.append(getattr(importlib.import_module(module), name))
    return tuple(found)


class ToozCoordinator(Coordinator):
    """A tooz driver with heartbeats (which keep held locks alive) and connect retries."""

    #: The URL options by which the driver expires the locks and memberships of a
    #: holder that stopped heart-beating, set from [coordination] lease_timeout unless
    #: the URL sets them.
    lease_options: tuple[str, ...] = ()
    #: Seconds added to lease_timeout in those options.
    lease_slack = 0
    #: What a tooz call may raise when the DLM is unreachable: tooz wraps some client
    #: errors and lets others through (those raised in its executor, e.g. by group calls).
    client_errors: tuple[tuple[str, str], ...] = ()
    #: The lease of the driver's locks.
    lease_class: type[ToozLease] = ToozLease
    #: The URL options that bound the driver's client's socket waits, set from
    #: call_timeout unless the URL sets them.
    call_options: tuple[str, ...] = ()
    #: Whether the driver reads those options as whole seconds.
    whole_seconds = False

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
        self.lease_seconds = float(lease_seconds)
        #: Seconds one call may wait for the DLM.
        self.call_timeout = call_timeout(self.lease_seconds)
        self._driver_url = self.with_lease(url, lease_seconds)
        self._errors: tuple[type[Exception], ...] = (
            tooz_coordination.ToozError,
            OSError,
            *importable_errors(self.client_errors),
        )
        self._stopped = threading.Event()
        self._heart: threading.Thread | None = None
        self._max_retries = max_retries
        self._retry_interval = retry_interval
        self._shutdown = shutdown or threading.Event()
        self._driver: Driver | None = None

    @classmethod
    def with_lease(cls, url: str, lease_seconds: int) -> str:
        """url with the driver's lease and call timeout options set, unless it sets
        them."""
        if not cls.lease_options and not cls.call_options:
            return url
        wait = call_timeout(lease_seconds)
        if cls.whole_seconds:
            wait = max(1, int(wait))
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        present = {key for key, _ in query}
        for key in cls.lease_options:
            if key not in present:
                query.append((key, str(lease_seconds + cls.lease_slack)))
        for key in cls.call_options:
            if key not in present:
                query.append((key, str(wait)))
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))

    def _describe(self) -> str:
        return f"the DLM at {self.url.split('@')[-1]}"

    # The hooks of the drivers that differ.

    def _prepare(self, driver: Driver) -> None:
        """Adjust tooz's driver before it connects."""

    def _started(self, driver: Driver) -> None:
        """Keep the membership and held locks alive: our own heartbeat, not tooz's:
        tooz's retries forever while the DLM is down, and its stop() waits for it, so a
        process could never exit."""
        self._heart = threading.Thread(
            target=self._beat, args=(driver,), name="dlm-heartbeat", daemon=True
        )
        self._heart.start()

    def _check_connected(self) -> None:
        """Raise ServiceUnavailable when a call would only wait for a lost connection."""

    def _before_stop(self, driver: Driver | None) -> None:
        """Prepare tooz's stop() (driver is None when not started)."""

    def _close(self, driver: Driver) -> None:
        """Free what tooz's stop() leaves open."""

    def start(self) -> None:
        attempt = 0
        while True:
            try:
                driver = tooz_coordination.get_coordinator(
                    self._driver_url, self.member_id.encode()
                )
                self._prepare(driver)
                driver.start(start_heart=False)
            except self._errors as exc:
                attempt += 1
                if attempt > self._max_retries or self._shutdown.wait(self._retry_interval):
                    raise ServiceUnavailable(
                        f"cannot connect to {self._describe()}: {exc}", service="DLM"
                    ) from exc
                LOG.warning("Cannot connect to %s (attempt %d): %s", self._describe(), attempt, exc)
                continue
            self._driver = driver
            self._stopped.clear()
            self._started(driver)
            return

    def _beat(self, driver: Driver) -> None:
        """Renew the membership and every held lock, three times per lease, until stopped.
        Failures are only logged here: the elections and lock calls report outages."""
        while not self._stopped.wait(self.lease_seconds / 3):
            try:
                driver.heartbeat()
            except self._errors as exc:
                LOG.debug("Heartbeat to %s failed: %s", self._describe(), exc)

    def stop(self) -> None:
        driver, self._driver = self._driver, None
        self._before_stop(driver)
        self._stopped.set()
        if self._heart is not None:
            self._heart.join(self.lease_seconds)
            self._heart = None
        if driver is not None:
            try:
                driver.stop()
            except self._errors as exc:
                LOG.warning("Error while leaving %s: %s", self._describe(), exc)
            self._close(driver)

    def _connected(self) -> Driver:
        if self._driver is None:
            raise ServiceUnavailable(f"not connected to {self._describe()}", service="DLM")
        self._check_connected()
        return self._driver

    @backend_time.timed(backend_time.DLM)
    def _call(self, what: str, call: Callable[[Driver], _T]) -> _T:
        """call(the connected driver), one call to the DLM; the client's failures as
        ServiceUnavailable."""
        driver = self._connected()
        try:
            return call(driver)
        except self._errors as exc:
            raise self._unavailable(what, exc) from exc

    def try_lease(self, name: str) -> Lease | None:
        def take(driver: Driver) -> Lease | None:
            lock = driver.get_lock(name.encode())
            acquired = self.lease_class.acquire(lock, self.call_timeout)
            return self.lease_class(lock, name, self.call_timeout) if acquired else None

        return self._call(f"lock {name}", take)

    def join(self, group: str) -> None:
        self._call(f"join group {group}", lambda driver: self._join(driver, group.encode()))

    def _join(self, driver: Driver, name: bytes) -> None:
        try:
            try:
                driver.join_group(name).get(self.call_timeout)
            except tooz_coordination.GroupNotCreated:
                with contextlib.suppress(tooz_coordination.GroupAlreadyExist):
                    driver.create_group(name).get(self.call_timeout)
                driver.join_group(name).get(self.call_timeout)
        except tooz_coordination.MemberAlreadyExist:
            pass

    def leave(self, group: str) -> None:
        def leave(driver: Driver) -> None:
            with contextlib.suppress(
                tooz_coordination.MemberNotJoined, tooz_coordination.GroupNotCreated
            ):
                driver.leave_group(group.encode()).get(self.call_timeout)

        self._call(f"leave group {group}", leave)

    def members(self, group: str) -> frozenset[str]:
        def members(driver: Driver) -> frozenset[str]:
            try:
                found = driver.get_members(group.encode()).get(self.call_timeout)
            except tooz_coordination.GroupNotCreated:
                return frozenset()
            return frozenset(m.decode() if isinstance(m, bytes) else str(m) for m in found)

        return self._call(f"list group {group}", members)

    def _unavailable(self, what: str, exc: Exception) -> ServiceUnavailable:
        return ServiceUnavailable(f"cannot {what} in {self._describe()}: {exc}", service="DLM")


def bounded(
    call: Callable[[], _T], timeout: float, late: Callable[[_T], object] | None = None
) -> _T:
    """call() in a thread of its own: its result, or TimeoutError (an OSError: a DLM
    outage) after timeout seconds. A call that returns later goes on to late(result)."""
    box: dict[str, Any] = {}
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
