"""Coordination: node locks, groups, leases and leader election through a DLM.

`connect(url, ...)` picks the driver by URL scheme (the table in backends): tooz for
redis://, etcd3+http://, zookeeper://, memcached:// (one host), file://; an in-process
table of locks for memory://. Other tooz schemes are refused (ConfigError; see
backends.unsupported). `DLM` is what the rest of the service may use of one: the
Coordinator drivers and the tests' fakes implement it.
"""

import contextlib
import importlib
from typing import Protocol

from inspector.coordination.backends import connect
from inspector.coordination.base import Coordinator, Lease

#: Driver classes named here, imported when first asked for (tooz's import is costly,
#: and commands that only check a URL need none).
_LAZY = {
    "LocalCoordinator": "inspector.coordination.drivers.memory",
    "ToozCoordinator": "inspector.coordination.drivers.common",
}


def __getattr__(name: str) -> type[Coordinator]:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class DLM(Protocol):
    """One process's member of the DLM (see `Coordinator` for what each call does)."""

    @property
    def member_id(self) -> str: ...
    @property
    def lease_seconds(self) -> float: ...
    @property
    def is_single_process(self) -> bool: ...
    @property
    def is_single_host(self) -> bool: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def try_lock(self, name: str) -> contextlib.AbstractContextManager[bool]: ...
    def try_lease(self, name: str) -> Lease | None: ...
    def join(self, group: str) -> None: ...
    def leave(self, group: str) -> None: ...
    def members(self, group: str) -> frozenset[str]: ...


__all__ = ["DLM", "Coordinator", "Lease", "LocalCoordinator", "ToozCoordinator", "connect"]
