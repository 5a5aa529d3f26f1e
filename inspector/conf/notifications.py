"""[notifications] options: notifications of introspections started, finished and failed,
kept in an outbox until their drivers accept them."""

from oslo_config import cfg

GROUP = "notifications"

OPTS = [
    cfg.ListOpt(
        "drivers",
        default=[],
        item_type=cfg.types.String(choices=["http", "log"]),
        help="Where notifications go: http (POST JSON to http_endpoint), log (the "
        "worker's log). Empty: no notifications are written.",
    ),
    cfg.URIOpt(
        "http_endpoint",
        schemes=["http", "https"],
        help="URL the http driver POSTs each notification to (JSON); any 2xx answer "
        "accepts it, anything else is retried.",
    ),
    cfg.FloatOpt("http_timeout", default=10.0, min=0.1, help="Seconds an HTTP delivery may take."),
    cfg.FloatOpt(
        "poll_interval",
        default=1.0,
        min=0.01,
        max=60.0,
        help="Seconds between two looks at the outbox by the sender (a leader-elected "
        "singleton, one per cluster).",
    ),
    cfg.FloatOpt(
        "max_backoff",
        default=300.0,
        min=0.1,
        help="Longest wait, in seconds, between two attempts at an undelivered "
        "notification (the wait doubles from poll_interval up to this).",
    ),
]
