"""[firewall] options: how the HA PXE firewall learns its whitelist and blacklist."""

from oslo_config import cfg

GROUP = "firewall"

OPTS = [
    cfg.FloatOpt(
        "blacklist_sync_period",
        default=15.0,
        min=0.0,
        max=30.0,
        deprecated_opts=[cfg.DeprecatedOpt("sync_period", group="pxe_filter")],
        help="Seconds between two polls of Ironic's ports for the blacklist. "
        "0 disables polling (the pub-sub channel alone keeps it current).",
    ),
    cfg.FloatOpt(
        "full_port_listing_period",
        default=600.0,
        min=0.0,
        help="Seconds between two listings of every Ironic port by the PXE filter's "
        "leader ([pxe_filter] whitelist_source = ironic; at 10,000 ports one costs Ironic "
        "about 2.4 CPU-seconds). Between them, each blacklist_sync_period lists only the "
        "ports created or updated since (sorted by Ironic's timestamps), unless Ironic's "
        "notifications flow. A deleted port's MAC stays denied until the next full "
        "listing (or its notification). 0: every listing is a full one.",
    ),
    cfg.FloatOpt(
        "whitelist_sync_period",
        default=15.0,
        min=0.0,
        max=30.0,
        help="Seconds between two polls of the store for the whitelist "
        "([pxe_filter] whitelist_source = ironic: between two full reconciles of the "
        "firewall leader with Ironic's nodes and ports). 0 disables polling (the pub-sub "
        "channel alone keeps it current).",
    ),
    cfg.FloatOpt(
        "inspection_poll_interval",
        default=1.5,
        min=0.0,
        max=30.0,
        help="With [pxe_filter] whitelist_source = ironic: seconds between two polls of "
        "Ironic's nodes under inspection by the firewall leader while no Ironic "
        "notification was heard within notification_quiet_period (none configured, or "
        "Ironic sends none): one listing per inspection state, filtered by Ironic, a few "
        "milliseconds of Ironic's time each. A node put into `inspect` is allowed, and "
        "one back to `manageable` denied, about half this later on average. 0: poll every "
        "whitelist_sync_period only.",
    ),
    cfg.FloatOpt(
        "inspection_poll_max_share",
        default=0.015,
        min=0.0,
        max=1.0,
        help="Largest share of one of Ironic's cores the leader's polls every "
        "inspection_poll_interval may take, counted as the time Ironic took to answer "
        "the quickest of the last five polls: the interval stretches to that time "
        "divided by this share "
        "(a slow or busy Ironic, many nodes under inspection at once), up to "
        "whitelist_sync_period. 0: never stretched.",
    ),
    cfg.FloatOpt(
        "notification_quiet_period",
        default=60.0,
        min=1.0,
        help="Seconds after the last Ironic notification heard (ironic_topic) during "
        "which they are taken to flow: the leader then polls Ironic's nodes under "
        "inspection every whitelist_sync_period instead of every "
        "inspection_poll_interval.",
    ),
    cfg.BoolOpt(
        "channel_enabled",
        default=True,
        help="Keep both lists current through the pub-sub channel as well: the workers "
        "announce introspections starting and ending, and ports added or removed. False: "
        "polling alone.",
    ),
    cfg.StrOpt(
        "channel_url",
        default="",
        secret=True,
        help="oslo.messaging URL of the pub-sub channel, e.g. "
        "rabbit://user:pass@host:5672/. Empty: the RabbitMQ of [queue] transport_url "
        "(in-process with memory://; none with a Redis queue, then polling alone).",
    ),
    cfg.StrOpt(
        "channel_topic",
        default="inspector_firewall",
        help="Notification topic of the channel (exchange `inspector`).",
    ),
    cfg.StrOpt(
        "ironic_topic",
        default="",
        help="Topic of Ironic's versioned notifications "
        "(ironic_versioned_notifications) on the channel's broker: ports created, "
        "updated or deleted in Ironic reach the blacklist at once (and, with "
        "[pxe_filter] whitelist_source = ironic, nodes entering or leaving inspection "
        "the whitelist). Empty: not listened "
        "to. Set it only when Ironic sends them ([DEFAULT] notification_level = info, "
        "[oslo_messaging_notifications] driver = messagingv2) to the same RabbitMQ, "
        "with the same [oslo_messaging_rabbit] amqp_durable_queues as Ironic.",
    ),
    cfg.StrOpt(
        "ironic_exchange",
        default="ironic",
        help="Exchange of Ironic's notifications (Ironic's control_exchange).",
    ),
]
