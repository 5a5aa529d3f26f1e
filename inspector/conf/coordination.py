"""[coordination] options: the DLM (tooz) for node locks, groups and leader election."""

from oslo_config import cfg

GROUP = "coordination"

OPTS = [
    cfg.StrOpt(
        "backend_url",
        default="memory://",
        help="tooz URL of the distributed lock manager: redis://host:6379, "
        "etcd3+http://host:2379 (pip extra [etcd]), zookeeper://host:2181 ([zookeeper]), "
        "memcached://host:11211 ([memcached]; accepted as ironic-inspector did, with a "
        "warning: memcached loses locks on eviction and restart), or "
        "memory:// (in-process, a single process only). ironic-inspector's default was "
        "memcached://localhost:11211.",
    ),
    cfg.BoolOpt(
        "single_host",
        default=False,
        deprecated_for_removal=True,
        deprecated_reason="`inspector api` and `inspector worker` accept memcached:// "
        "without it (warning what memcached cannot promise); only `inspector pxe-filter` "
        "still reads it.",
        help="Every Inspector process that uses this DLM runs on this one host (as "
        "`inspector all` always does): `inspector pxe-filter` then accepts memcached:// "
        "or memory:// and opens without waiting for another host's close, and the "
        "memcached warning is not given.",
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
    cfg.IntOpt(
        "lease_timeout",
        default=3,
        min=1,
        help="Seconds after which a process that stopped heart-beating (killed, frozen, "
        "cut off) loses its node locks, its group membership and its leaderships; "
        "its heartbeat runs every half of it. Sets tooz's lock_timeout and "
        "membership_timeout unless backend_url sets them. It bounds the fail-over "
        "time of the leader-elected singletons after a kill -9.",
    ),
    cfg.FloatOpt(
        "election_interval",
        default=0.5,
        min=0.01,
        max=60.0,
        help="Seconds between two looks at each singleton's leader lease: how soon a "
        "free leadership is taken (after a leader's SIGTERM, within this). The group "
        "is looked at every third of lease_timeout, or at this interval if longer.",
    ),
]
