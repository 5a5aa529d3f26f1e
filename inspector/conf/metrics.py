"""[metrics] options: where each worker process serves its Prometheus metrics."""

from oslo_config import cfg

GROUP = "metrics"

OPTS = [
    cfg.HostAddressOpt(
        "worker_listen_address",
        default="127.0.0.1",
        help="Address on which each `inspector worker` serves GET /metrics.",
    ),
    cfg.IntOpt(
        "worker_listen_port",
        default=0,
        min=0,
        max=65535,
        help="Port on which each `inspector worker` serves GET /metrics (Prometheus "
        "text, no authentication). 0 disables it. Two workers on one host need two "
        "ports (one configuration file each).",
    ),
]
