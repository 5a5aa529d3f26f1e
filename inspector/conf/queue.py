"""[queue] options: the work queue's transport, its retry policy and its time-outs."""

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
    cfg.FloatOpt(
        "connect_timeout",
        default=2.0,
        min=0.1,
        help="Seconds a new connection to the queue's broker may take: the TCP "
        "connection and, on RabbitMQ, the AMQP handshake.",
    ),
    cfg.FloatOpt(
        "socket_timeout",
        default=3.0,
        min=0.1,
        help="Seconds one read or write of an open connection may wait: RabbitMQ's "
        "confirmation of a published request, a queue declaration, a Redis reply (Redis "
        "waits at least 2 s: its polls last 1 s). A broker that stops answering (packets "
        "dropped, process frozen) fails the call after this instead of holding the thread.",
    ),
    cfg.FloatOpt(
        "operation_timeout",
        default=5.0,
        min=0.1,
        help="Seconds one put to the queue or one count of it may take in an API request "
        "(/v1/continue, a start or abort, /metrics), reconnections and retries included, "
        "and never past the request's [api] request_timeout (on RabbitMQ its connects, "
        "reads and writes wait at most what is left); then the API answers 503. Keep it "
        "well under the 10 s a ramdisk's post should be answered in. Workers and commands "
        "keep the max_retries x retry_interval budget, each connect, read and write "
        "bounded by connect_timeout and socket_timeout.",
    ),
]
