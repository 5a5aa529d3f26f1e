"""[metrics] options: where each worker process and each `inspector pxe-filter` serve
their Prometheus metrics."""

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
    cfg.HostAddressOpt(
        "pxe_filter_listen_address",
        default="127.0.0.1",
        help="Address on which `inspector pxe-filter` serves GET /metrics.",
    ),
    cfg.IntOpt(
        "pxe_filter_listen_port",
        default=0,
        min=0,
        max=65535,
        help="Port on which `inspector pxe-filter` serves GET /metrics (Prometheus text, "
        "no authentication): its role, term, MACs allowed and denied, the age of its "
        "lists, the lag from Ironic's change to the rule, notifications heard, polls made "
        "and Ironic's answer times. 0 disables it.",
    ),
]
