"""[clean_up] options: how long finished introspections and their data are kept."""

from oslo_config import cfg

GROUP = "clean_up"

OPTS = [
    cfg.FloatOpt(
        "report_expiration",
        default=86400.0,
        min=0.001,
        help="Seconds after which the status and stored data of a finished or "
        "failed introspection are removed by the periodic expiry task.",
    ),
]
