"""Each clean-up task's period, from the configuration: what the tasks run on and what
`inspector status` checks their last runs against (without importing the tasks)."""

from oslo_config import cfg


def periods(conf: cfg.ConfigOpts) -> dict[str, float]:
    """Each clean-up task's period: its own option, or [DEFAULT] clean_up_period."""
    group, default = conf.clean_up, conf.clean_up_period
    return {
        "timeout": group.timeout_period or default,
        "ironic_sync": group.ironic_sync_period or default,
        "expiry": group.expiry_period or default,
    }
