"""memcached://host:11211 (tooz's memcached driver, pymemcache's client): no HA.

Features: a lock is a key that expires; renewing is a compare-and-set that extends it
only while it still holds our member id (tooz's `touch` would extend it whoever holds
it), and releasing deletes it only after such an extension. Groups are keys too. One
unreplicated server whose locks live in a cache (evicted when full, lost when it
restarts): no HA, so `inspector api` and `inspector worker` warn so at start-up (its
caveat in backends.py), and `inspector pxe-filter` accepts it only with
[coordination] single_host.
Options: lock_timeout and membership_timeout, set from [coordination] lease_timeout
plus MEMCACHED_EXPIRY_SLACK, and timeout (pymemcache's socket and connect timeouts,
whole seconds; tooz's default is 30) from two thirds of it, unless the URL sets them.
Requires: pymemcache (Inspector's `memcached` extra).
"""

import logging
from typing import TYPE_CHECKING

from inspector.coordination.drivers.common import ToozCoordinator, ToozLease
from inspector.coordination.drivers.tooz_private import memcached_forget, memcached_owner

if TYPE_CHECKING:  # client libraries of optional extras: not imported at run time
    from tooz.drivers.memcached import MemcachedLock

LOG = logging.getLogger(__name__)

#: memcached counts whole seconds from a clock that ticks once a second: a key set to
#: expire in n seconds may go after n - 1. One more second keeps it for the full lease.
MEMCACHED_EXPIRY_SLACK = 1


class MemcachedLease(ToozLease):
    """memcached: tooz renews with `touch`, which extends the key whoever holds it now.
    Compare-and-set instead: the expiry is extended only while the key still holds our
    member id, untouched since we read it."""

    _lock: "MemcachedLock"

    def _refresh(self) -> bool:
        lock = self._lock
        client, member = lock.coord.client, memcached_owner(lock)
        value, cas = client.gets(lock.name)
        if value != member or not lock.acquired:
            return False
        return bool(client.cas(lock.name, value, cas, expire=lock.timeout, noreply=False))

    def _lost(self) -> str | None:
        return None if self._refresh() else "it had expired"

    def _release(self) -> None:
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
            memcached_forget(lock)


class MemcachedCoordinator(ToozCoordinator):
    is_single_host = True
    lease_options = ("lock_timeout", "membership_timeout")
    lease_slack = MEMCACHED_EXPIRY_SLACK
    call_options = ("timeout",)
    whole_seconds = True
    client_errors = (("pymemcache.exceptions", "MemcacheError"),)
    lease_class = MemcachedLease
