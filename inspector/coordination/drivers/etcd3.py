"""etcd3+http://host:2379 or etcd3+https:// (tooz's etcd3gw driver, over etcd's gRPC
gateway).

Features: locks are keys under an etcd lease; renewing refreshes the lease and checks
its TTL, since the lock's heartbeat says True even once the lease had expired. Groups
are keys under a lease too.
Options: lock_timeout and membership_timeout, set from [coordination] lease_timeout,
and timeout (etcd3gw's HTTP timeout, whole seconds; tooz's default is 30) from two
thirds of it, unless the URL sets them.
Requires: etcd3gw (Inspector's `etcd` extra).
"""

from typing import TYPE_CHECKING

from inspector.coordination.drivers.common import Driver, ToozCoordinator, ToozLease
from inspector.coordination.drivers.tooz_private import etcd3_forget, etcd3_lease_ttl

if TYPE_CHECKING:  # client libraries of optional extras: not imported at run time
    from tooz.drivers.etcd3gw import Etcd3Lock


class EtcdLease(ToozLease):
    """etcd3gw: its lock's heartbeat says True even when the lease had expired."""

    _lock: "Etcd3Lock"

    def _lost(self) -> str | None:
        ttl = etcd3_lease_ttl(self._lock)
        if ttl is None:
            return ""
        return "it had expired" if ttl <= 0 else None

    def _release(self) -> None:
        super()._release()
        # A lock whose release failed (it had expired) stays in the driver's list, whose
        # heartbeat would keep refreshing its dead lease.
        etcd3_forget(self._lock)


class Etcd3Coordinator(ToozCoordinator):
    lease_options = ("lock_timeout", "membership_timeout")
    call_options = ("timeout",)
    whole_seconds = True
    client_errors = (("etcd3gw.exceptions", "Etcd3Exception"),)
    lease_class = EtcdLease

    def _close(self, driver: Driver) -> None:
        """tooz's stop() leaves etcd3gw's HTTP session open."""
        session = getattr(getattr(driver, "client", None), "session", None)
        if session is not None and hasattr(session, "close"):
            session.close()
