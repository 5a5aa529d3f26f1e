"""[notifications] options: notifications of introspections started, finished and failed,
kept in an outbox until their drivers accept them."""

from oslo_config import cfg

GROUP = "notifications"

OPTS = [
    cfg.ListOpt(
        "drivers",
        default=[],
        item_type=cfg.types.String(choices=["http", "messaging", "log"]),
        help="Where notifications go: http (POST JSON to http_endpoint), messaging "
        "(oslo.messaging notifications on transport_url, as messagingv2 does: the "
        "exchange must exist and a queue must be bound, else the notification is kept "
        "and retried), log (the worker's log). Empty: no notifications are written.",
    ),
    cfg.URIOpt(
        "http_endpoint",
        schemes=["http", "https"],
        help="URL the http driver POSTs each notification to (JSON); any 2xx answer "
        "accepts it, anything else is retried.",
    ),
    cfg.FloatOpt("http_timeout", default=10.0, min=0.1, help="Seconds an HTTP delivery may take."),
    cfg.StrOpt(
        "transport_url",
        secret=True,
        help="AMQP URL of the messaging driver; unset: [queue] transport_url.",
    ),
    cfg.StrOpt(
        "exchange",
        default="openstack",
        help="Topic exchange of the messaging driver (oslo.messaging's control_exchange "
        "of the consumers).",
    ),
    cfg.ListOpt(
        "topics",
        default=["notifications"],
        help="Notification topics of the messaging driver (routing key <topic>.info).",
    ),
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
