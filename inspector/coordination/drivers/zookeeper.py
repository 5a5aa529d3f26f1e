"""zookeeper://host:2181 or kazoo:// (tooz's ZooKeeper driver, kazoo's client).

Features: a lock is an ephemeral node, alive while our session is (kazoo pings on its
own: no heartbeat of ours); renewing checks that our node is still there. Groups are
ephemeral nodes too. kazoo's synchronous calls wait without a time-out for a lost
connection to come back: taking and releasing a lock run in a thread of their own,
waited for the call timeout (two thirds of the lease), and calls are refused while kazoo
is disconnected.
Options: timeout (the session's), set from [coordination] lease_timeout unless the URL
sets it; the server bounds it by its minSessionTimeout and maxSessionTimeout (by
default 2 and 20 ticks: 4 s and 40 s).
Requires: kazoo (Inspector's `zookeeper` extra).
"""

import contextlib
import logging
from typing import TYPE_CHECKING, cast

from tooz import locking as tooz_locking

from inspector.coordination.drivers.common import Driver, ToozCoordinator, ToozLease, bounded
from inspector.coordination.drivers.tooz_private import (
    kazoo_client,
    kazoo_lock,
    skip_leaving_groups_on_stop,
)
from inspector.errors import ServiceUnavailable

if TYPE_CHECKING:  # client libraries of optional extras: not imported at run time
    from tooz.drivers.zookeeper import KazooDriver, ZooKeeperLock

LOG = logging.getLogger(__name__)


class ZooKeeperLease(ToozLease):
    """ZooKeeper: the lock is an ephemeral node, alive while our session is (kazoo
    keeps it alive). Renewing checks that our node is still there.

    kazoo's synchronous calls wait, without a time-out, for a lost connection to come
    back: taking and releasing run in a thread of their own, waited for the call
    timeout; a lock taken after that is released at once."""

    _lock: "ZooKeeperLock"

    @staticmethod
    def acquire(lock: tooz_locking.Lock, timeout: float) -> bool:
        return bounded(
            lambda: lock.acquire(blocking=False),
            timeout,
            late=lambda taken: taken and lock.release(),
        )

    def _lost(self) -> str | None:
        recipe = kazoo_lock(self._lock)
        client = recipe.client
        if recipe.is_acquired and recipe.node is not None and client.connected:
            path = f"{recipe.path}/{recipe.node}"
            data, _ = client.get_async(path).get(timeout=self._timeout)
            if data == recipe.data:
                return None
        return "not connected, or its node is gone"

    def _release(self) -> None:
        # Disconnected, the release waits in its thread for the connection to come back
        # (or the session to expire, which frees the lock too).
        connected = kazoo_lock(self._lock).client.connected
        try:
            bounded(self._lock.release, self._timeout if connected else 0.0)
        except Exception as exc:
            LOG.warning("Cannot release lease %s yet (it will be): %s", self._name, exc)


class ZooKeeperCoordinator(ToozCoordinator):
    lease_options = ("timeout",)
    client_errors = (("kazoo.exceptions", "KazooException"),)
    lease_class = ZooKeeperLease
    #: kazoo's client: its calls are only made while it is connected.
    _kazoo = None

    def _started(self, driver: Driver) -> None:
        # kazoo pings on its own; tooz's heartbeat (a read) would only wait forever
        # while the connection is down.
        self._kazoo = kazoo_client(cast("KazooDriver", driver))  # this module's driver

    def _check_connected(self) -> None:
        if self._kazoo is not None and not self._kazoo.connected:
            raise ServiceUnavailable(
                f"connection to {self._describe()} lost (reconnecting)", service="DLM"
            )

    def _before_stop(self, driver: Driver | None) -> None:
        kazoo, self._kazoo = self._kazoo, None
        if kazoo is not None and not kazoo.connected and driver is not None:
            # tooz would leave each group and wait forever for the connection: the
            # members' nodes go with the session anyway.
            skip_leaving_groups_on_stop(driver)

    def _close(self, driver: Driver) -> None:
        """tooz's stop() stops kazoo's client without closing it."""
        with contextlib.suppress(Exception):
            kazoo_client(cast("KazooDriver", driver)).close()
