"""Which source [pxe_filter] whitelist_source selects: a plain table of the option's names
to the function that attaches that source to a firewall manager (its polls and, for
Ironic's inspections, the ListSource that hears Ironic's notifications). Attaches only:
nothing polls or listens before the manager starts."""

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from oslo_config import cfg

from inspector.broker import channels
from inspector.errors import ConfigError
from inspector.firewall import ironic_source, sources
from inspector.firewall.manager import FirewallManager
from inspector.ironic import IronicClient
from inspector.lifecycle import Outages

if TYPE_CHECKING:  # the store imports SQLAlchemy, which a PXE filter never does
    from inspector.store import Store

__all__ = ["SOURCES", "Backends"]


@dataclasses.dataclass(frozen=True)
class Backends:
    """What the process has for a source (None: it has none; a source that needs it
    raises ConfigError) and the retry budget its polls count their failures against."""

    db: "Store | None"
    ironic: IronicClient | None
    channel: channels.Channel | None
    outages: Outages


def _inspector(conf: cfg.ConfigOpts, firewall: FirewallManager, have: Backends) -> None:
    """Our own introspections: the whitelist polled from the store, the blacklist from
    Ironic's ports when there is an Ironic; announcements and Ironic's port notifications
    from the channel (the manager's default ListSource)."""
    db, ironic = have.db, have.ironic
    if db is None:
        raise ConfigError("[pxe_filter] whitelist_source = inspector needs the [database]")
    group = conf.firewall
    whitelist = (firewall.whitelist, sources.introspected_macs(db), "database")
    polls = [(*whitelist, group.whitelist_sync_period)]
    if ironic is not None:
        blacklist = (firewall.blacklist, sources.ironic_ports(ironic), "Ironic")
        polls.append((*blacklist, group.blacklist_sync_period))
    for target, fetch, service, period in polls:
        firewall.watch(target, fetch, period, outages=have.outages, service=service)


def _ironic(conf: cfg.ConfigOpts, firewall: FirewallManager, have: Backends) -> None:
    """Ironic's own inspections: both lists, and the unknown MACs' fate, from Ironic
    (firewall.ironic_source)."""
    if have.ironic is None:
        raise ConfigError("[pxe_filter] whitelist_source = ironic needs Ironic ([ironic])")
    ironic_source.attach(
        firewall, have.ironic, conf, have.channel, outages=have.outages, service="Ironic"
    )


#: The source each name of [pxe_filter] whitelist_source attaches (the option's choices
#: are these names: tests/unit/test_wiring_firewall.py checks it).
SOURCES: dict[str, Callable[[cfg.ConfigOpts, FirewallManager, Backends], None]] = {
    "inspector": _inspector,
    "ironic": _ironic,
}
