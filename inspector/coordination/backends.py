"""Which coordinator a [coordination] backend_url selects: a plain table of URL scheme
to driver class (one module each under inspector.coordination.drivers, imported only
when a coordinator is made: checking a URL imports no DLM client nor tooz), and why a
URL cannot serve."""

import dataclasses
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from inspector.coordination.base import Coordinator, Lease
from inspector.errors import ConfigError

__all__ = ["DRIVERS", "Coordinator", "Lease", "connect", "scheme_of", "unsupported"]

_DRIVERS_PACKAGE = "inspector.coordination.drivers"


@dataclasses.dataclass(frozen=True)
class Driver:
    """A driver class by name, and the client library it needs."""

    #: "module:Class", the module relative to inspector.coordination.drivers.
    path: str
    #: The Python package of its client, and the extra of our distribution that brings it.
    client_library: tuple[str, str] | None = None
    #: What it cannot promise processes on several hosts (logged at their start-up and
    #: said by `inspector status`); None: what the service needs, it gives.
    caveat: str | None = None

    def load(self) -> type[Coordinator]:
        module, name = self.path.split(":")
        return getattr(importlib.import_module(f"{_DRIVERS_PACKAGE}.{module}"), name)


_ETCD3 = Driver("etcd3:Etcd3Coordinator", ("etcd3gw", "etcd"))
_ZOOKEEPER = Driver("zookeeper:ZooKeeperCoordinator", ("kazoo", "zookeeper"))

#: The driver of each URL scheme: those that give what the service needs (non-blocking
#: locks that expire, whose holder can renew them and learn that it lost them, and
#: groups). Not tooz's ipc://, mysql://, postgresql:// or kubernetes://: none has groups.
DRIVERS: dict[str, Driver] = {
    "memory": Driver("memory:LocalCoordinator"),
    "redis": Driver("redis:RedisCoordinator"),
    "etcd3+http": _ETCD3,
    "etcd3+https": _ETCD3,
    "zookeeper": _ZOOKEEPER,
    "kazoo": _ZOOKEEPER,
    "memcached": Driver(
        "memcached:MemcachedCoordinator",
        ("pymemcache", "memcached"),
        caveat="memcached is one unreplicated server whose locks live in a cache: a lock "
        "is lost when memcached evicts it (full) or restarts, so for a moment two "
        "processes may each lead a singleton (two PXE hosts open, a periodic task run "
        "twice); node data stays safe (every state change is a compare-and-swap on its "
        "version). Redis, etcd or ZooKeeper do not lose locks: move to one of them",
    ),
    "file": Driver("file:FileCoordinator"),
}


def scheme_of(url: str) -> str:
    return url.split(":", 1)[0]


def unsupported(url: str) -> str | None:
    """Why [coordination] backend_url cannot serve as the DLM, or None when it can."""
    scheme = scheme_of(url)
    driver = DRIVERS.get(scheme)
    if driver is None:
        return (
            f"[coordination] backend_url = {scheme}://... is not a DLM Inspector can use: "
            "its locks must expire and be renewable, and it must have groups; use "
            "redis://..., etcd3+http://..., zookeeper://... (memcached://... on one "
            "host, memory:// in one process)"
        )
    library = driver.client_library
    if library is not None and importlib.util.find_spec(library[0]) is None:
        module, extra = library
        return (
            f"[coordination] backend_url = {scheme}://... needs the Python package "
            f"{module}: install Inspector with its '{extra}' extra (pip install "
            f"'.[{extra}]' in a checkout, or 'ironic-ha-inspector[{extra}]' from its wheel)"
        )
    return None


def caveat(url: str) -> str | None:
    """What the DLM of url cannot promise processes on several hosts, or None."""
    driver = DRIVERS.get(scheme_of(url))
    return None if driver is None else driver.caveat


def with_lease(url: str, lease_seconds: int) -> str:
    """The URL tooz gets: url with its driver's lease options set, unless it sets them."""
    from inspector.coordination.drivers.common import ToozCoordinator  # noqa: PLC0415

    entry = DRIVERS.get(scheme_of(url))
    driver = None if entry is None else entry.load()
    if driver is None or not issubclass(driver, ToozCoordinator):
        return url
    return driver.with_lease(url, lease_seconds)


def connect(url: str, member_id: str, **options: Any) -> Coordinator:
    """The coordinator for url (not started yet); ConfigError when url's DLM cannot
    serve (see `unsupported`). options: a tooz driver's (ToozCoordinator: max_retries,
    retry_interval, shutdown, lease_seconds); memory:// has none."""
    problem = unsupported(url)
    if problem:
        raise ConfigError(problem)
    driver = DRIVERS[scheme_of(url)].load()
    # Each driver class takes its own arguments (the tooz ones a URL and options).
    make: Callable[..., Coordinator] = driver
    if driver.is_single_process:
        return make(member_id)
    return make(url, member_id, **options)
