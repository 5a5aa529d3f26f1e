"""Wires what a worker and `inspector pxe-filter` both run: the process's DLM member, the
retry budget of each backend, and the PXE firewall (its manager, closed before anything
starts; its sources, its channel, its election). The worker's own parts (its pool, its
other elections, its metrics) are inspector.cmd.worker_wiring's.

Imports neither the store nor the worker's modules: `inspector pxe-filter` for Ironic's
inspection starts without them.
"""

import logging
import math
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from oslo_config import cfg

from inspector import coordination
from inspector.broker import channels
from inspector.coordination.election import Election
from inspector.firewall import choice, demand, drivers, manager, takeover
from inspector.ironic import IronicClient
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from inspector.systemd import Notifier

if TYPE_CHECKING:  # the store (SQLAlchemy): only the processes that open one import it
    from inspector.store import Store

LOG = logging.getLogger(__name__)


def open_coordinator(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> coordination.Coordinator:
    coordinator = coordination.connect(
        conf.coordination.backend_url,
        member_id(conf),
        max_retries=conf.coordination.max_retries,
        retry_interval=conf.coordination.retry_interval,
        shutdown=lifecycle.shutdown,
        lease_seconds=conf.coordination.lease_timeout,
    )
    coordinator.start()
    return coordinator


def outages(
    conf: cfg.ConfigOpts, lifecycle: Lifecycle, observer: Callable[[str], None] | None = None
) -> Outages:
    """The retry budget of each backend, from its group's max_retries and retry_interval."""
    groups = {"database": "database", "DLM": "coordination", "queue": "queue", "Ironic": "ironic"}
    return Outages(
        lifecycle,
        {
            service: RetryPolicy(conf[group].max_retries, conf[group].retry_interval)
            for service, group in groups.items()
        },
        observer=observer,
    )


def member_id(conf: cfg.ConfigOpts) -> str:
    return f"{conf.host}-{os.getpid()}"


def closed_firewall(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> manager.FirewallManager:
    """The process's PXE firewall manager, its driver checked and the port closed; it
    tells systemd (READY=1 is the caller's) and, if its driver cannot expire anything,
    opens only once a previous leader is certainly closed (firewall.takeover)."""
    in_process = conf.coordination.backend_url.startswith("memory:")
    driver, notifier = drivers.load(conf), Notifier.from_env()
    lease = math.inf if in_process else conf.coordination.lease_timeout
    refresh = min(conf.coordination.election_interval, 0.5)
    group = conf.pxe_filter
    takeover.check_watchdog(notifier, driver, group.watchdog_timeout)
    firewall = manager.FirewallManager(
        driver,
        lifecycle,
        deny_unknown=group.deny_unknown_macs,
        host=conf.host,
        member=member_id(conf),
        lease_seconds=lease,
        refresh=refresh,
        notifier=notifier,
        takeover_delay=takeover.delay(
            driver,
            lease_seconds=lease,
            watchdog_timeout=group.watchdog_timeout,
            close_timeout=group.close_timeout,
            refresh=refresh,
            single_host=conf.coordination.single_host,
        ),
    )
    firewall.close_at_start()
    return firewall


def start_firewall(
    conf: cfg.ConfigOpts,
    firewall: manager.FirewallManager,
    election: Election,
    *,
    db: "Store | None",
    ironic: IronicClient | None,
    channel: channels.Channel | None,
    budget: Outages,
    lifecycle: Lifecycle,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """The firewall's source (firewall.choice) and channel, its thread, its election. The
    noop driver polls nothing (nothing would use what the polls read, above all a listing
    of every Ironic port each period) and does not run for the leadership (a noop leader
    would keep every real host's PXE service closed); it answers status requests. A real
    driver with a store stamps that this host applies announcements (firewall.demand)
    and, if the first to, waits until the announcers have read it before its election.
    `meanwhile` runs before that wait: what else the process starts (a worker's pool
    takes work during it)."""
    polls = firewall.driver.name != "noop"
    if polls:
        attach = choice.SOURCES[conf.pxe_filter.whitelist_source]
        attach(conf, firewall, choice.Backends(db, ironic, channel, budget))
    wait = 0.0
    if channel is not None:
        firewall.listen(channel)
        if polls and db is not None:
            stamper = demand.Stamper(db, conf.host)
            wait = stamper.first()
            firewall.stamp_every(stamper, demand.STAMP_PERIOD)
    firewall.start()
    if meanwhile is not None:
        meanwhile()
    if wait:
        LOG.info(
            "Waiting %.1f s for the workers to hear that this host applies announcements", wait
        )
        lifecycle.shutdown.wait(wait)
    if polls:
        election.start()
