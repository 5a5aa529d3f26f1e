"""PXE filter drivers by [pxe_filter] driver name, and `load`, which builds the configured one.

The manager calls check() at start-up, then apply/close; see docs/firewall.md.
"""

from oslo_config import cfg

from inspector.firewall.commands import Runner, parse_prefix
from inspector.firewall.drivers.base import Driver
from inspector.firewall.drivers.dnsmasq import DnsmasqDriver
from inspector.firewall.drivers.ipset import IpsetDriver
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.drivers.noop import NoopDriver

#: [pxe_filter] driver -> class.
DRIVERS: dict[str, type[Driver]] = {
    driver.name: driver
    for driver in (IptablesDriver, IpsetDriver, NftablesDriver, DnsmasqDriver, NoopDriver)
}

__all__ = ["DRIVERS", "Driver", "load", "runner"]


def runner(conf: cfg.ConfigOpts) -> Runner:
    """The command runner of [pxe_filter] root_helper and command_timeout."""
    return Runner(
        prefix=parse_prefix(conf.pxe_filter.root_helper),
        timeout=conf.pxe_filter.command_timeout,
    )


def load(conf: cfg.ConfigOpts) -> Driver:
    """The [pxe_filter] driver, built from the configuration (not yet checked)."""
    return DRIVERS[conf.pxe_filter.driver].from_conf(conf, runner(conf))
