"""`inspector pxe-filter`: the HA PXE filter alone, for a PXE host: the firewall, its leader
election and its sources (the Ironic client, the notifications listener; the store only
with [pxe_filter] whitelist_source = inspector). No API, no worker pool, no work queue.

With whitelist_source = ironic it is the highly available replacement of Ironic's
ironic-pxe-filter (Ironic 2026.1 and later): docs/firewall.md and docs/deployment.md.
"""

import argparse
import contextlib
import logging

from oslo_config import cfg

from inspector import conf as config
from inspector.api.logs import setup_logging
from inspector.broker import channels
from inspector.cmd import wiring
from inspector.cmd.elections import Elections
from inspector.coordination import backends as dlm
from inspector.errors import ConfigError
from inspector.firewall import manager
from inspector.firewall.metrics import FilterMetrics
from inspector.ironic.lazy import LazyIronic
from inspector.lifecycle import Lifecycle

LOG = logging.getLogger(__name__)

#: The command's name, as the operator types it.
COMMAND = "pxe-filter"


def problems(conf: cfg.ConfigOpts) -> list[str]:
    """Why `inspector pxe-filter` cannot work with conf, each naming the option."""
    found = []
    group = conf.pxe_filter
    if group.driver == "noop":
        found.append(
            "[pxe_filter] driver = noop filters nothing: set nftables, iptables, ipset or dnsmasq"
        )
    backend_url = conf.coordination.backend_url
    unusable = dlm.unsupported(backend_url)
    single = dlm.scheme_of(backend_url) in ("memory", "memcached")
    if unusable:
        found.append(unusable)
    elif single and not conf.coordination.single_host:
        found.append(
            f"[coordination] backend_url = {dlm.scheme_of(backend_url)}:// cannot elect one "
            "firewall leader among several PXE hosts: use redis://..., etcd3+http://... or "
            "zookeeper://... (or set [coordination] single_host = true when this is the "
            "only PXE host)"
        )
    if group.whitelist_source == "inspector":
        if not conf.database.connection:
            found.append(
                "[pxe_filter] whitelist_source = inspector reads the nodes under "
                "introspection from Inspector's database, and [database] connection is "
                "not set: set it to the workers' database, or whitelist_source = ironic"
            )
    elif not (
        conf.firewall.whitelist_sync_period
        or conf.firewall.inspection_poll_interval
        or conf.firewall.ironic_topic
    ):
        found.append(
            "[firewall] whitelist_sync_period = 0, inspection_poll_interval = 0 and no "
            "[firewall] ironic_topic: nothing would tell the firewall which nodes Ironic "
            "inspects; set one"
        )
    # Ironic's ports are the blacklist whatever the whitelist's source.
    problem = LazyIronic(conf).check()
    if problem:
        found.append(problem)
    return found


def check(conf: cfg.ConfigOpts) -> None:
    """Raise ConfigError (exit status 2) naming every option that cannot work."""
    found = problems(conf)
    if found:
        raise ConfigError(
            f"`inspector {COMMAND}` cannot work with this configuration:\n  " + "\n  ".join(found)
        )
    if conf.firewall.ironic_topic and channels.channel_url(conf) in (None, "memory://"):
        LOG.warning(
            "[firewall] ironic_topic is set but no RabbitMQ carries it ([firewall] "
            "channel_url is not set): the lists come from polling only"
        )


def serve_metrics(conf: cfg.ConfigOpts, firewall: manager.FirewallManager) -> FilterMetrics:
    """The filter's metrics, told of what the firewall does and served on [metrics]
    pxe_filter_listen_address and pxe_filter_listen_port."""
    metrics = FilterMetrics()
    metrics.status, metrics.leading = firewall.status, firewall.is_leader
    firewall.observer = metrics
    group = conf.metrics
    metrics.serve(group.pxe_filter_listen_address, group.pxe_filter_listen_port)
    return metrics


def run(_args: argparse.Namespace, argv: list[str]) -> int:
    conf = config.load(argv, conf=config.build())
    setup_logging(conf)
    check(conf)
    lifecycle = Lifecycle()
    lifecycle.install_signal_handlers()
    with contextlib.ExitStack() as stack:
        firewall = wiring.closed_firewall(conf, lifecycle)
        stack.callback(firewall.stop)
        if conf.metrics.pxe_filter_listen_port:
            stack.callback(serve_metrics(conf, firewall).stop)
        budget = wiring.outages(conf, lifecycle)
        db = None
        if conf.pxe_filter.whitelist_source == "inspector":
            # The store (SQLAlchemy), imported for this source only.
            from inspector import services  # noqa: PLC0415

            db = services.open_store(conf)
            stack.callback(db.close)
        coordinator = wiring.open_coordinator(conf, lifecycle)
        stack.callback(coordinator.stop)
        elections = Elections(conf, coordinator, db, lifecycle, budget, stack)
        wiring.start_firewall(
            conf,
            firewall,
            elections.make(manager.KIND, firewall.lead),
            db=db,
            ironic=LazyIronic(conf, shutdown=lifecycle.shutdown),
            channel=channels.from_conf(conf, host=conf.host),
            budget=budget,
            lifecycle=lifecycle,
        )
        firewall.notifier.ready()
        lifecycle.wait_for_stop()
    LOG.info("Stopped (%s)", lifecycle.finished())
    return lifecycle.exit_status
