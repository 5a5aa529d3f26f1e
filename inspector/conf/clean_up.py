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
    cfg.FloatOpt(
        "timeout_period",
        min=0.001,
        sample_default="[DEFAULT] clean_up_period",
        help="Seconds between runs of the introspection time-out task; unset: "
        "[DEFAULT] clean_up_period.",
    ),
    cfg.FloatOpt(
        "ironic_sync_period",
        min=0.001,
        sample_default="[DEFAULT] clean_up_period",
        help="Seconds between runs of the Ironic synchronisation task (removes the "
        "records of nodes Ironic no longer has); unset: [DEFAULT] clean_up_period.",
    ),
    cfg.FloatOpt(
        "expiry_period",
        min=0.001,
        sample_default="[DEFAULT] clean_up_period",
        help="Seconds between runs of the expiry task (removes finished introspections "
        "older than report_expiration); unset: [DEFAULT] clean_up_period.",
    ),
]
