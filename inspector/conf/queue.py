"""[queue] options: the work queue's transport and its retry policy."""

from oslo_config import cfg

GROUP = "queue"

OPTS = [
    cfg.StrOpt(
        "transport_url",
        default="memory://",
        help="kombu URL of the work queue: amqp://user:pass@host:5672// (RabbitMQ, "
        "production), redis://host:6379/0, or memory:// (in-process, a single "
        "`inspector all` process only).",
    ),
    cfg.StrOpt("queue_name", default="inspector", help="Name of the work queue."),
    cfg.IntOpt(
        "max_retries",
        default=10,
        min=0,
        help="Connection attempts to the queue before the process gives up and exits.",
    ),
    cfg.FloatOpt(
        "retry_interval",
        default=2.0,
        min=0.001,
        help="Seconds between two connection attempts to the queue.",
    ),
    cfg.FloatOpt(
        "visibility_timeout",
        default=300.0,
        min=1.0,
        help="Redis transport only: seconds after which a request taken by a worker "
        "that died without acknowledging it is delivered again. Keep it above the "
        "longest task; RabbitMQ redelivers as soon as the connection drops.",
    ),
]
