"""redis://host:6379 (tooz's Redis driver; Sentinel with ?sentinel=name): the DLM
tested in CI.

Features: locks are keys that expire (renewed by our heartbeat; the heartbeat says
when one is lost), groups are hashes whose members' keys expire.
Options: lock_timeout and membership_timeout, set from [coordination] lease_timeout,
socket_timeout and socket_connect_timeout (redis-py's) from two thirds of it (tooz's
default is 30 s: a Redis that stopped answering would hang a call past its lease),
unless the URL sets them; tooz's own (sentinel, ssl...) as they are.
Requires: redis (a dependency of Inspector).
"""

from typing import Any, cast

import redis
from redis import backoff as redis_backoff
from redis import retry as redis_retry
from tooz.drivers import redis as tooz_redis

from inspector.coordination.drivers.common import Driver, ToozCoordinator


class RedisCoordinator(ToozCoordinator):
    lease_options = ("lock_timeout", "membership_timeout")
    call_options = ("socket_timeout", "socket_connect_timeout")
    client_errors = (("redis.exceptions", "RedisError"),)

    def _prepare(self, driver: Driver) -> None:
        without_client_retries(cast(tooz_redis.RedisDriver, driver))  # this module's driver


def without_client_retries(driver: tooz_redis.RedisDriver) -> None:
    """Make tooz's Redis client fail at once when Redis is down.

    redis-py >= 6 retries 3 times with exponential backoff inside every command, and
    tooz retries each call 15 times on top: about a minute per call before an outage
    surfaces. Our own retry policy ([coordination] max_retries, retry_interval) is the
    one that should decide, so the client gets no retries of its own.

    The shim over tooz's private `_make_client(parsed_url, options,
    default_socket_timeout)`, the one place that touches it: the client it makes is
    given no retries. tests/unit/test_dlm_redis.py fails if tooz changes it.
    """
    make_client = driver._make_client

    def make_client_without_retries(*args: Any, **kwargs: Any) -> redis.Redis:
        client = make_client(*args, **kwargs)
        client.set_retry(redis_retry.Retry(redis_backoff.NoBackoff(), 0))
        return client

    driver._make_client = make_client_without_retries  # type: ignore[method-assign]  # the shim
