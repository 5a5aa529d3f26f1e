"""Coordination: node locks, groups, leases and leader election through a DLM.

`connect(url, ...)` picks the driver by URL scheme (the table in backends): tooz for
redis://, etcd3+http://, zookeeper://, memcached:// (one host), file://; an in-process
table of locks for memory://. Other tooz schemes are refused (ConfigError; see
backends.unsupported).
"""

from inspector.coordination.backends import connect
from inspector.coordination.base import Coordinator, Lease
from inspector.coordination.drivers.common import ToozCoordinator
from inspector.coordination.drivers.memory import LocalCoordinator

__all__ = ["Coordinator", "Lease", "LocalCoordinator", "ToozCoordinator", "connect"]
