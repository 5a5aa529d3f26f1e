"""The shims over tooz's private parts (inspector.coordination.drivers.tooz_private),
each on real tooz driver objects without a server: these fail if tooz renames what a
shim touches, changes its type, or no longer behaves as the shim assumes. The etcd3gw
driver talks to a fake gRPC gateway (its client's HTTP call answered here), the
memcached one to pymemcache's in-memory client, the ZooKeeper one is never started
(kazoo's client is made unconnected); the base class's stop() runs on the file driver.
The contract suite (tests/contract/test_coordinator.py) runs them on the real servers."""

import inspect
import itertools
import threading

import pytest
from tooz import coordination as tooz_coordination

from inspector.coordination.drivers import tooz_private

MEMBER = b"member-a"


class Gateway:
    """etcd's gRPC gateway as tooz's etcd3gw lock and driver use it: leases that can
    expire, and a transaction that takes the lock while `free`."""

    def __init__(self) -> None:
        self.ids = itertools.count(100)
        self.live: set[int] = set()
        self.free = True
        self.keepalives: list[int] = []

    def post(self, url: str, *args, json=None, **kwargs):
        if url.endswith("/lease/grant"):
            lease = next(self.ids)
            self.live.add(lease)
            return {"ID": str(lease), "TTL": str(json["TTL"])}
        if url.endswith("/lease/keepalive"):
            lease = int(json["ID"])
            self.keepalives.append(lease)
            if lease in self.live:
                return {"result": {"ID": str(lease), "TTL": "5"}}
            return {"result": {"ID": str(lease)}}  # expired: etcd gives no TTL
        if url.endswith("/kv/txn"):
            return {"succeeded": self.free}
        return {}


@pytest.fixture
def etcd(monkeypatch):
    pytest.importorskip("etcd3gw")
    driver = tooz_coordination.get_coordinator(
        "etcd3+http://127.0.0.1:9?api_version=v3&lock_timeout=5", MEMBER
    )
    gateway = Gateway()
    monkeypatch.setattr(driver.client, "post", gateway.post)
    driver.start(start_heart=False)
    yield driver, gateway
    driver.stop()


def held_etcd3_lock(driver):
    lock = driver.get_lock(b"some-lock")
    assert lock.acquire(blocking=False)
    return lock


def test_etcd3_lease_ttl_refreshes_the_lease_tooz_took_with_the_lock(etcd):
    lease_class = pytest.importorskip("etcd3gw.lease").Lease
    driver, gateway = etcd
    lock = held_etcd3_lock(driver)
    lease = lock._lease  # what the shim refreshes: the lease made by this acquire
    assert isinstance(lease, lease_class)
    assert tooz_private.etcd3_lease_ttl(lock) == 5
    assert gateway.keepalives == [lease.id]
    gateway.live.discard(lease.id)
    assert tooz_private.etcd3_lease_ttl(lock) == -1
    assert lock.heartbeat() is True, "tooz's heartbeat now tells: drop EtcdLease._lost?"
    assert lock.release() is True
    assert tooz_private.etcd3_lease_ttl(lock) is None


def test_etcd3_lease_ttl_takes_the_guard_tooz_takes(etcd):
    """tooz's heartbeat and release take the lock's `_exclusive_access` (a
    threading.Lock): the shim refreshes under the same guard."""
    driver, _ = etcd
    lock = held_etcd3_lock(driver)
    guard = lock._exclusive_access
    assert isinstance(guard, type(threading.Lock()))
    entered = []

    class Spy:
        def __enter__(self):
            entered.append(True)
            return guard.__enter__()

        def __exit__(self, *exc):
            return guard.__exit__(*exc)

    lock._exclusive_access = Spy()
    lock.heartbeat()
    assert entered, "tooz's etcd3gw heartbeat no longer takes _exclusive_access"
    entered.clear()
    tooz_private.etcd3_lease_ttl(lock)
    assert entered
    entered.clear()
    lock.release()
    assert entered, "tooz's etcd3gw release no longer takes _exclusive_access"


def test_etcd3_forget_stops_tooz_heartbeat_refreshing_the_lock(etcd):
    driver, gateway = etcd
    lock = held_etcd3_lock(driver)
    driver.heartbeat()
    assert lock._lease.id in gateway.keepalives, "tooz's heartbeat no longer renews locks"
    tooz_private.etcd3_forget(lock)
    assert not lock.acquired
    gateway.keepalives.clear()
    driver.heartbeat()
    assert gateway.keepalives, "the membership lease is refreshed"
    assert lock._lease.id not in gateway.keepalives
    tooz_private.etcd3_forget(lock)  # twice: already dropped


def test_etcd3_forget_after_tooz_released_the_lock(etcd):
    driver, _ = etcd
    lock = held_etcd3_lock(driver)
    assert lock.release() is True
    tooz_private.etcd3_forget(lock)
    assert not lock.acquired


@pytest.fixture
def memcached_client():
    utils = pytest.importorskip("pymemcache.test.utils")

    class Client(utils.MockMemcacheClient):
        """pymemcache's in-memory client, which also records the keys touched."""

        def __init__(self) -> None:
            super().__init__()
            self.touched: list[bytes] = []

        def touch(self, key, expire=0, noreply=True):
            self.touched.append(key)
            return super().touch(key, expire, noreply)

    return Client()


def memcached_driver(client, member: bytes = MEMBER):
    driver = tooz_coordination.get_coordinator("memcached://127.0.0.1:9?lock_timeout=5", member)
    driver.client = client  # what its start() would make: pymemcache's client
    return driver


def test_memcached_owner_is_what_tooz_stores_in_the_lock_key(memcached_client):
    lock = memcached_driver(memcached_client).get_lock(b"some-lock")
    assert lock.acquire(blocking=False)
    assert tooz_private.memcached_owner(lock) == MEMBER
    assert memcached_client.get(lock.name) == tooz_private.memcached_owner(lock)
    assert lock.is_still_owner()
    # The public attributes MemcachedLease uses beside it.
    assert lock.coord.client is memcached_client
    assert lock.timeout == 5
    other = memcached_driver(memcached_client, b"member-b").get_lock(b"some-lock")
    assert other.name == lock.name
    assert not other.acquire(blocking=False)
    assert tooz_private.memcached_owner(other) != memcached_client.get(lock.name)


def test_memcached_forget_stops_tooz_heartbeat_touching_the_lock(memcached_client):
    driver = memcached_driver(memcached_client)
    lock = driver.get_lock(b"some-lock")
    assert lock.acquire(blocking=False)
    driver.heartbeat()
    assert lock.name in memcached_client.touched, "tooz's heartbeat no longer touches locks"
    tooz_private.memcached_forget(lock)
    assert not lock.acquired
    memcached_client.touched.clear()
    driver.heartbeat()
    assert lock.name not in memcached_client.touched
    tooz_private.memcached_forget(lock)  # twice: already dropped


def test_memcached_forget_after_tooz_released_the_lock(memcached_client):
    lock = memcached_driver(memcached_client).get_lock(b"some-lock")
    assert lock.acquire(blocking=False)
    assert lock.release() is True
    tooz_private.memcached_forget(lock)
    assert not lock.acquired


@pytest.fixture
def zookeeper():
    pytest.importorskip("kazoo")
    driver = tooz_coordination.get_coordinator("zookeeper://127.0.0.1:9", MEMBER)
    yield driver
    tooz_private.kazoo_client(driver).close()


def test_kazoo_client_is_the_driver_client(zookeeper):
    client = tooz_private.kazoo_client(zookeeper)
    assert isinstance(client, pytest.importorskip("kazoo.client").KazooClient)
    assert client.connected is False  # made with the driver, not started


def test_kazoo_lock_is_the_recipe_tooz_lock_wraps(zookeeper):
    """The recipe's attributes ZooKeeperLease reads: its client, whether it is held,
    its node, path and data."""
    lock = zookeeper.get_lock(b"some-lock")
    recipe = tooz_private.kazoo_lock(lock)
    assert isinstance(recipe, pytest.importorskip("kazoo.recipe.lock").Lock)
    assert recipe.client is tooz_private.kazoo_client(zookeeper)
    assert recipe.is_acquired is False
    assert recipe.node is None
    assert isinstance(recipe.path, str)
    assert recipe.path.endswith("/some-lock")
    assert recipe.data == MEMBER
    assert "path" in inspect.signature(recipe.client.get_async).parameters
    recipe.is_acquired = True
    assert lock.acquired, "tooz's ZooKeeper lock no longer says what its recipe holds"


@pytest.fixture
def file_url(tmp_path):
    return f"file://{tmp_path}"


def file_members(url: str):
    drivers = [tooz_coordination.get_coordinator(url, member) for member in (MEMBER, b"b")]
    for driver in drivers:
        driver.start(start_heart=False)
    return drivers


@pytest.mark.parametrize("skip", [True, False], ids=["skipped", "not-skipped"])
def test_skip_leaving_groups_on_stop(file_url, skip):
    """tooz's stop() leaves the groups of `_joined_groups` (the file driver's stop runs
    the base class's, which is the ZooKeeper driver's): emptied, it leaves none."""
    first, second = file_members(file_url)
    group = b"group"
    first.create_group(group).get()
    first.join_group(group).get()
    assert first._joined_groups == {group}
    if skip:
        tooz_private.skip_leaving_groups_on_stop(first)
    first.stop()
    try:
        members = second.get_members(group).get()
    finally:
        second.stop()
    assert (MEMBER in members) is skip


def test_the_zookeeper_driver_stops_as_the_base_class_does():
    """So the file driver's test above holds for it."""
    zookeeper = pytest.importorskip("tooz.drivers.zookeeper")
    assert zookeeper.KazooDriver.stop is tooz_coordination.CoordinationDriver.stop
