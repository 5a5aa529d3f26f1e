"""[oslo_messaging_rabbit] options: TLS to RabbitMQ (oslo.messaging's names and defaults),
for the work queue, the messaging notification driver and the firewall channel."""

from oslo_config import cfg

GROUP = "oslo_messaging_rabbit"

OPTS = [
    cfg.BoolOpt(
        "ssl",
        default=False,
        help="Connect to RabbitMQ over TLS (an amqps:// URL does too). The broker's "
        "certificate is verified, chain and host name, against ssl_ca_file or the "
        "system's CAs. The work queue, the messaging notification driver and the "
        "firewall channel use it; Redis URLs do not (rediss:// takes kombu's ssl_* query "
        "parameters).",
    ),
    cfg.StrOpt(
        "ssl_ca_file",
        default="",
        help="PEM file of the CAs that sign RabbitMQ's certificate; empty: the system's.",
    ),
    cfg.StrOpt(
        "ssl_cert_file",
        default="",
        help="PEM file of the client certificate presented to RabbitMQ (for brokers "
        "that require one); empty: none.",
    ),
    cfg.StrOpt(
        "ssl_key_file",
        default="",
        help="PEM file of the client certificate's private key; empty: in ssl_cert_file.",
    ),
]
