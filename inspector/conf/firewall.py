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
        "whitelist_sync_period",
        default=15.0,
        min=0.0,
        max=30.0,
        help="Seconds between two polls of the store for the whitelist. "
        "0 disables polling (the pub-sub channel alone keeps it current).",
    ),
]
