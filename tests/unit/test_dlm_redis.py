"""tooz's Redis driver as our coordinator drives it, on fakeredis (no server): the shim
over tooz's private `_make_client`, and a holder that stops renewing in this process.
The contract (tests/contract/test_coordinator.py) runs on fakeredis too, but for its
checks with a second process, which tooz cannot start against fakeredis."""

import inspect
import uuid

import pytest
from tooz.drivers import redis as tooz_redis

from inspector.coordination import connect
from inspector.coordination.drivers import redis as redis_driver
from tests.contract import test_coordinator as contract
from tests.fakes.redis_server import fake_redis
from tests.integration.cluster import wait_for


@pytest.fixture(scope="module")
def url():
    with fake_redis() as served:
        yield f"{served.removesuffix('/0')}?timeout=5"


def members(url: str, lease_seconds: int = 3, count: int = 2):
    started = []
    for prefix in "abcdef"[:count]:
        coordinator = connect(url, f"{prefix}-{uuid.uuid4().hex[:6]}", lease_seconds=lease_seconds)
        coordinator.start()
        started.append(coordinator)
    return started


@pytest.fixture
def pair(url):
    started = members(url)
    yield tuple(started)
    for coordinator in started:
        coordinator.stop()


@pytest.fixture
def short_leases(url):
    started = members(url, contract.LEASE)
    yield started
    for coordinator in started:
        coordinator.stop()


def test_a_holder_that_stops_renewing_loses_its_lease_and_membership(short_leases):
    """The contract's frozen holder, in this process (tooz cannot start in another one
    against fakeredis, see tests.fakes.redis_server): its heartbeat stops, its lease
    and membership expire, and its next renewal says the lease is lost."""
    holder, other = short_leases
    name, group = f"leader-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    lease = holder.try_lease(name)
    assert lease is not None
    holder.join(group)
    other.join(group)
    holder._stopped.set()  # its heartbeat's loop ends, as a frozen process's would
    holder._heart.join(contract.LEASE)
    taken = wait_for(lambda: other.try_lease(name), contract.LEASE + 10, 0.02, "the lease")
    wait_for(
        lambda: holder.member_id not in other.members(group), contract.LEASE + 10, 0.05, "drop"
    )
    assert not lease.renew()
    lease.release()  # must not free the new holder's lease
    assert taken.renew()
    assert other.try_lease(name) is None
    taken.release()


def test_make_client_is_what_the_shim_wraps():
    """tooz's private RedisDriver._make_client, which without_client_retries wraps:
    this fails if tooz renames it or changes its parameters."""
    make_client = getattr(tooz_redis.RedisDriver, "_make_client", None)
    assert callable(make_client), "tooz's RedisDriver lost _make_client: see drivers/redis.py"
    assert list(inspect.signature(make_client).parameters) == [
        "parsed_url",
        "options",
        "default_socket_timeout",
    ], "tooz's RedisDriver._make_client changed: see drivers/redis.py"


def test_the_client_tooz_makes_has_no_retries_of_its_own(pair):
    """Started through tooz (its _start calls _make_client), the client is the shim's."""
    for coordinator in pair:
        retry = coordinator._driver._client.get_retry()
        retries = retry.get_retries() if hasattr(retry, "get_retries") else retry._retries
        assert retries == 0


def test_without_the_shim_the_client_would_retry(url, monkeypatch):
    """The check above can fail: redis-py's own client retries by default."""
    monkeypatch.setattr(redis_driver.RedisCoordinator, "_prepare", lambda self, driver: None)
    (coordinator,) = members(url, count=1)
    try:
        retry = coordinator._driver._client.get_retry()
        retries = retry.get_retries() if hasattr(retry, "get_retries") else retry._retries
        assert retries > 0
    finally:
        coordinator.stop()
