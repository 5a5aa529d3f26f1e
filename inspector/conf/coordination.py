"""[coordination] options: the DLM (tooz) for node locks, groups and leader election."""

from oslo_config import cfg

GROUP = "coordination"

OPTS = [
    cfg.StrOpt(
        "backend_url",
        default="memory://",
        help="tooz URL of the distributed lock manager: redis://host:6379, "
        "etcd3+http://host:2379, zookeeper://host:2181, or memory:// (in-process, "
        "a single process only). ironic-inspector's default was memcached.",
    ),
    cfg.IntOpt(
        "max_retries",
        default=10,
        min=0,
        help="Connection attempts to the DLM before the process gives up and exits.",
    ),
    cfg.FloatOpt(
        "retry_interval",
        default=2.0,
        min=0.001,
        help="Seconds between two connection attempts to the DLM.",
    ),
]
