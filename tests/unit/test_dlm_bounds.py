"""Every call to the DLM waits at most two thirds of the lease: the clients' socket
timeouts (tooz's default is 30 s) and our own waits, so no thread hangs past a lease it
holds when the DLM stops answering."""

import threading

import pytest
from tooz import coordination as tooz_coordination

from inspector.coordination import backends
from inspector.coordination.drivers import common
from inspector.coordination.drivers.zookeeper import ZooKeeperLease


def tooz_driver(url: str):
    """tooz's driver for our URL of url, not started."""
    return tooz_coordination.get_coordinator(backends.with_lease(url, 3), b"member")


def test_the_redis_client_times_out_within_the_lease():
    driver = tooz_driver("redis://127.0.0.1:1")
    client = driver._make_client(driver._parsed_url, driver._options, driver.timeout)
    kwargs = client.connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == kwargs["socket_connect_timeout"] == 2.0
    assert driver.lock_timeout == 3  # the lease itself is unchanged


@pytest.mark.parametrize("url", ["etcd3+http://127.0.0.1:1", "memcached://127.0.0.1:1"])
def test_etcd_and_memcached_clients_time_out_within_the_lease(url):
    pytest.importorskip("etcd3gw" if url.startswith("etcd") else "pymemcache")
    driver = tooz_driver(url)
    # etcd3gw's HTTP client; pymemcache's, made when the driver starts, from this.
    client = getattr(driver, "client", None)
    assert (client.timeout if url.startswith("etcd") else driver.timeout) == 2
    assert driver.lock_timeout >= 3


def test_a_coordinator_waits_two_thirds_of_its_lease():
    coordinator = backends.connect("redis://127.0.0.1:1", "member", lease_seconds=6)
    assert coordinator.call_timeout == 4.0


def test_a_zookeeper_lock_call_is_bounded_by_the_call_timeout():
    release = threading.Event()
    released = threading.Event()

    class HungLock:
        """kazoo waiting for a connection that does not come back."""

        def acquire(self, blocking=True):
            release.wait(10)
            return True

        def release(self):
            released.set()

    try:
        with pytest.raises(TimeoutError):
            ZooKeeperLease.acquire(HungLock(), 0.05)
    finally:
        release.set()
    # Taken after the caller gave up: released at once, not held by nobody.
    assert released.wait(10)


def test_bounded_returns_the_result_in_time():
    assert common.bounded(lambda: 42, 1.0) == 42
