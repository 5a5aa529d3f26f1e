"""Coordination: node locks (and, later, groups and leader election) through a DLM.

`connect(url, ...)` picks the backend by URL scheme: tooz for redis://, etcd3+http://,
zookeeper://, memcached:// (one host), file://; an in-process table of locks for
memory://. Other tooz schemes are refused (ConfigError; see backends.unsupported).
"""

from inspector.coordination.backends import (
    Coordinator,
    LocalCoordinator,
    ToozCoordinator,
    connect,
)

__all__ = ["Coordinator", "LocalCoordinator", "ToozCoordinator", "connect"]
