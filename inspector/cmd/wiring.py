"""Wires a worker process from the configuration: its DLM member, its pool of request
threads, its elections, its PXE firewall, its metrics; the backends it shares with
the API (store, queue, Ironic) come from inspector.services.
"""

import contextlib
import logging
import math
import os
from collections.abc import Callable, Iterator

from oslo_config import cfg

from inspector import coordination
from inspector.broker import channels
from inspector.broker.tls import Tls
from inspector.cmd.elections import Elections
from inspector.coordination import DLM
from inspector.coordination.election import Election
from inspector.firewall import demand, drivers, ironic_source, manager, sources
from inspector.ironic import IronicClient
from inspector.ironic.lazy import LazyIronic
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from inspector.notifications import drivers as notification_drivers
from inspector.notifications import messaging, sender
from inspector.periodic import runner
from inspector.periodic.tasks import CleanUp
from inspector.services import Backends
from inspector.store import Store
from inspector.worker import timing
from inspector.worker.faults import Faults
from inspector.worker.handler import Handler
from inspector.worker.metrics import NoMetrics, WorkerMetrics
from inspector.worker.pool import Pool
from inspector.worker.tasks import NoTasks, Tasks
from inspector.worker.throttle import RebootThrottle
from inspector.worker.watchdog import Watchdog

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


def checked(ironic: LazyIronic) -> LazyIronic:
    """`ironic`, its configuration checked: a worker says at start-up that it is unusable."""
    problem = ironic.check()
    if problem:
        LOG.error("%s: introspections will fail until it is", problem)
    return ironic


def worker_metrics(conf: cfg.ConfigOpts) -> WorkerMetrics | NoMetrics:
    """The worker's metrics when [metrics] worker_listen_port is set, else a no-op."""
    return WorkerMetrics() if conf.metrics.worker_listen_port else NoMetrics()


def member_id(conf: cfg.ConfigOpts) -> str:
    return f"{conf.host}-{os.getpid()}"


def closed_firewall(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> manager.FirewallManager:
    """The process's PXE firewall manager, its driver checked and the port closed."""
    in_process = conf.coordination.backend_url.startswith("memory:")
    firewall = manager.FirewallManager(
        drivers.load(conf),
        lifecycle,
        deny_unknown=conf.pxe_filter.deny_unknown_macs,
        host=conf.host,
        member=member_id(conf),
        lease_seconds=math.inf if in_process else conf.coordination.lease_timeout,
        refresh=min(conf.coordination.election_interval, 0.5),
    )
    firewall.close_at_start()
    return firewall


def start_firewall(
    conf: cfg.ConfigOpts,
    firewall: manager.FirewallManager,
    election: Election,
    *,
    db: Store | None,
    ironic: IronicClient | None,
    channel: channels.Channel | None,
    budget: Outages,
    lifecycle: Lifecycle,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """The firewall's sources (polls and channel), its thread, then its election. The
    noop driver polls nothing (nothing would use what the polls read, above all a listing
    of every Ironic port each period) and does not run for the leadership (a noop leader
    would keep every real host's PXE service closed); it answers status requests. A real
    driver with a store stamps that this host applies announcements (firewall.demand)
    and, if the first to, waits until the announcers have read it before its election.
    `meanwhile` runs before that wait: what else the process starts (a worker's pool
    takes work during it)."""
    group = conf.firewall
    polls = firewall.driver.name != "noop"
    if polls and conf.pxe_filter.whitelist_source == "ironic":  # both lists from Ironic
        ironic_source.attach(firewall, ironic, conf, channel, outages=budget, service="Ironic")
    elif polls:
        firewall.watch(
            firewall.whitelist,
            sources.introspected_macs(db),
            group.whitelist_sync_period,
            outages=budget,
            service="database",
        )
        if ironic is not None:
            firewall.watch(
                firewall.blacklist,
                sources.ironic_ports(ironic),
                group.blacklist_sync_period,
                outages=budget,
                service="Ironic",
            )
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


def notification_sender(conf: cfg.ConfigOpts, db: Store, budget: Outages) -> sender.Sender:
    group = conf.notifications
    chosen: list[notification_drivers.Driver] = []
    for name in group.drivers:
        if name == "http":
            chosen.append(notification_drivers.HttpDriver(group.http_endpoint, group.http_timeout))
        elif name == "log":
            chosen.append(notification_drivers.LogDriver())
        elif name == "messaging":
            chosen.append(
                messaging.MessagingDriver(
                    group.transport_url or conf.queue.transport_url,
                    exchange=group.exchange,
                    topics=group.topics,
                    publisher_id=f"inspector.{conf.host}",
                    tls=Tls.from_conf(conf),
                )
            )
    return sender.Sender(
        db, chosen, budget, poll_interval=group.poll_interval, max_backoff=group.max_backoff
    )


def request_pool(
    conf: cfg.ConfigOpts,
    lifecycle: Lifecycle,
    backends: Backends,
    coordinator: DLM,
    *,
    ironic: IronicClient | None,
    channel: channels.Channel | None,
    metrics: WorkerMetrics | NoMetrics,
    budget: Outages,
    faults: Faults,
) -> Pool:
    """The pool of request threads (not started) and what they use: the handler, the
    tasks (none without `ironic`), the reboot throttle, the firewalls' announcer."""
    # What the request threads use: timed per backend when metrics are served.
    record = metrics.backend_time if isinstance(metrics, WorkerMetrics) else None
    t_db, t_coordinator, t_queue, t_ironic = timing.timed(
        record, backends.store, coordinator, backends.queue, ironic
    )
    throttle = RebootThrottle(t_coordinator, t_db, lifecycle, conf.worker.reboot_throttle)
    announcer = (
        None
        if channel is None
        else channels.Announcer(channel, wanted=demand.Demand(backends.store))
    )
    tasks = (
        NoTasks()
        if t_ironic is None
        else Tasks(t_db, t_ironic, conf, throttle=throttle, announcer=announcer)
    )
    handler = Handler(t_db, t_coordinator, t_queue, tasks, faults=faults, metrics=metrics)
    return Pool(
        t_queue,
        handler,
        lifecycle,
        size=conf.worker.pool_size,
        get_timeout=conf.worker.get_timeout,
        outages=budget,
    )


def serve_metrics(
    conf: cfg.ConfigOpts,
    metrics: WorkerMetrics,
    elections: Elections,
    firewall: manager.FirewallManager,
    stack: contextlib.ExitStack,
) -> None:
    """The worker's GET /metrics, with its leaderships and its firewall, until `stack`
    closes."""
    for kind, election in elections.made.items():
        metrics.watch_leader(kind, election)
    metrics.watch_firewall(firewall.status)
    metrics.serve(conf.metrics.worker_listen_address, conf.metrics.worker_listen_port)
    stack.callback(metrics.stop)


@contextlib.contextmanager
def running_pool(conf: cfg.ConfigOpts, lifecycle: Lifecycle, backends: Backends) -> Iterator[Pool]:
    """A started worker process on `backends`: its PXE firewall (closed before anything
    starts, closed again at exit), its DLM member, the pool, the elections of the
    periodic tasks, of the notifications (with drivers) and of the firewall, the
    database watchdog and the metrics; all stopped on exit (the elections leave their
    groups first). The caller closes `backends` after."""
    with contextlib.ExitStack() as stack:
        firewall = closed_firewall(conf, lifecycle)
        stack.callback(firewall.stop)
        metrics = worker_metrics(conf)
        budget = outages(conf, lifecycle, metrics.backend_failed)
        db, queue = backends.store, backends.queue
        coordinator = open_coordinator(conf, lifecycle)
        stack.callback(coordinator.stop)
        faults = Faults.from_env()
        ironic = None if faults.skip_tasks else checked(backends.ironic)
        channel = channels.from_conf(conf, host=conf.host)
        pool = request_pool(
            conf,
            lifecycle,
            backends,
            coordinator,
            ironic=ironic,
            channel=channel,
            metrics=metrics,
            budget=budget,
            faults=faults,
        )
        elections = Elections(conf, coordinator, db, lifecycle, budget, stack)
        cleanup = faults.periodic(CleanUp(db, queue, ironic, conf).tasks())
        elections.make(runner.KIND, runner.Runner(db, cleanup, budget)).start()
        if conf.notifications.drivers:
            elections.make(sender.KIND, notification_sender(conf, db, budget)).start()
        firewall_election = elections.make(manager.KIND, firewall.lead)
        Watchdog(db, lifecycle, budget).start()
        if isinstance(metrics, WorkerMetrics):
            serve_metrics(conf, metrics, elections, firewall, stack)
        # The pool takes work once the firewall listens, not after its election's wait.
        start_firewall(
            conf,
            firewall,
            firewall_election,
            db=db,
            ironic=ironic,
            channel=channel,
            budget=budget,
            lifecycle=lifecycle,
            meanwhile=pool.start,
        )
        yield pool
