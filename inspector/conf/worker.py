"""[worker] options: the worker pool, queue polling and the reboot throttle."""

import os

from oslo_config import cfg

GROUP = "worker"

OPTS = [
    cfg.IntOpt(
        "pool_size",
        default=os.cpu_count() or 1,
        min=1,
        sample_default="the number of CPUs",
        help="Worker threads per worker process.",
    ),
    cfg.FloatOpt(
        "get_timeout",
        default=3.0,
        min=0.001,
        help="Seconds a worker waits for a request before checking the shutdown "
        "flag again; it bounds how long a graceful shutdown waits for idle workers.",
    ),
    cfg.FloatOpt(
        "reboot_throttle",
        default=0.0,
        min=0.0,
        deprecated_opts=[cfg.DeprecatedOpt("introspection_delay", group="DEFAULT")],
        help="Seconds between two power-ons across the whole cluster (one "
        "distributed lock held for this long after each power-on). 0 disables it.",
    ),
]
