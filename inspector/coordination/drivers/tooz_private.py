"""The private parts of tooz's etcd3gw, memcached and ZooKeeper drivers (and of their
base class) that our drivers rely on: one small shim each, the one place that touches
them. tests/unit/test_tooz_private.py fails if tooz changes what a shim assumes.

Checked against tooz 9.1.0 (installed), 8.1.0 (stable/2026.1) and 7.0.0 (stable/2025.2),
with kazoo 2.11.0 and 2.10.0, etcd3gw 2.7.0, 2.5.0 and 2.4.2, pymemcache 4.0.0.
The Redis driver's shim, `without_client_retries`, is in drivers/redis.py (its test in
tests/unit/test_dlm_redis.py).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # client libraries of optional extras: not imported at run time
    from kazoo.client import KazooClient
    from kazoo.recipe.lock import Lock as KazooLock
    from tooz.coordination import CoordinationDriver
    from tooz.drivers.etcd3gw import Etcd3Lock
    from tooz.drivers.memcached import MemcachedLock
    from tooz.drivers.zookeeper import KazooDriver, ZooKeeperLock


# etcd3gw


def etcd3_lease_ttl(lock: Etcd3Lock) -> int | None:
    """Refresh the etcd lease of tooz's held etcd3gw lock: the TTL etcd answers (-1
    once the lease had expired: tooz's heartbeat would still say True), or None when
    tooz no longer counts the lock as held.

    Under the lock's private guard `_exclusive_access` (a threading.Lock), which tooz's
    own heartbeat and release take too; the lease is the lock's private `_lease` (an
    etcd3gw Lease, made by each acquire)."""
    with lock._exclusive_access:
        if not lock.acquired:
            return None
        return lock._lease.refresh()  # type: ignore[attr-defined]  # set by each acquire


def etcd3_forget(lock: Etcd3Lock) -> None:
    """Drop tooz's etcd3gw lock from its driver's held locks (the private set
    `_coord._acquired_locks`): tooz's heartbeat stops refreshing its lease, and
    lock.acquired says False. A lock already dropped is left as it is."""
    lock._coord._acquired_locks.discard(lock)


# memcached


def memcached_owner(lock: MemcachedLock) -> bytes:
    """What tooz's memcached lock stores in its key while held: its driver's member id
    (the private `coord._member_id`)."""
    return lock.coord._member_id


def memcached_forget(lock: MemcachedLock) -> None:
    """Drop tooz's memcached lock from its driver's held locks (the private list
    `coord._acquired_locks`): tooz's heartbeat stops touching its key, and
    lock.acquired says False. A lock already dropped is left as it is."""
    with contextlib.suppress(ValueError):
        lock.coord._acquired_locks.remove(lock)


# ZooKeeper (kazoo)


def kazoo_lock(lock: ZooKeeperLock) -> KazooLock:
    """kazoo's lock recipe that tooz's ZooKeeper lock wraps (its private `_lock`); its
    `client` is the driver's kazoo client."""
    return lock._lock


def kazoo_client(driver: KazooDriver) -> KazooClient:
    """The kazoo client of tooz's ZooKeeper driver (its private `_coord`), made with the
    driver and started by its start()."""
    return driver._coord


def skip_leaving_groups_on_stop(driver: CoordinationDriver) -> None:
    """Make the driver's next stop() leave no group: tooz's stop() leaves each group of
    the private set `_joined_groups`, which this empties."""
    driver._joined_groups.clear()
