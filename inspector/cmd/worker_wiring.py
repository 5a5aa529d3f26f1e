"""Wires a worker process from the configuration: its pool of request threads and what
they use, its elections (periodic tasks, notifications, the PXE firewall), its database
watchdog, its metrics; its DLM member and firewall come from inspector.cmd.wiring, the
backends it shares with the API (store, queue, Ironic) from inspector.services.
"""

import contextlib
import logging
from collections.abc import Iterator

from oslo_config import cfg

from inspector.broker import channels
from inspector.cmd.elections import Elections
from inspector.cmd.wiring import closed_firewall, open_coordinator, outages, start_firewall
from inspector.coordination import DLM
from inspector.firewall import demand, manager
from inspector.ironic import IronicClient
from inspector.ironic.lazy import LazyIronic
from inspector.lifecycle import Lifecycle, Outages
from inspector.notifications import choice, sender
from inspector.periodic import runner
from inspector.periodic.tasks import CleanUp
from inspector.services import Backends
from inspector.store import Store
from inspector.worker.faults import Faults
from inspector.worker.handler import Handler
from inspector.worker.metrics import NoMetrics, WorkerMetrics
from inspector.worker.pool import Pool
from inspector.worker.tasks import NoTasks, Tasks
from inspector.worker.throttle import RebootThrottle
from inspector.worker.watchdog import Watchdog

LOG = logging.getLogger(__name__)


def checked(ironic: LazyIronic) -> LazyIronic:
    """`ironic`, its configuration checked: a worker says at start-up that it is unusable."""
    problem = ironic.check()
    if problem:
        LOG.error("%s: introspections will fail until it is", problem)
    return ironic


def worker_metrics(conf: cfg.ConfigOpts) -> WorkerMetrics | NoMetrics:
    """The worker's metrics when [metrics] worker_listen_port is set, else a no-op."""
    return WorkerMetrics() if conf.metrics.worker_listen_port else NoMetrics()


def notification_sender(conf: cfg.ConfigOpts, db: Store, budget: Outages) -> sender.Sender:
    group = conf.notifications
    return sender.Sender(
        db,
        choice.build(conf),
        budget,
        poll_interval=group.poll_interval,
        max_backoff=group.max_backoff,
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
    db = backends.store
    throttle = RebootThrottle(coordinator, db, lifecycle, conf.worker.reboot_throttle)
    announcer = (
        None
        if channel is None
        else channels.Announcer(channel, wanted=demand.Demand(backends.store))
    )
    tasks = (
        NoTasks()
        if ironic is None
        else Tasks(db, ironic, conf, throttle=throttle, announcer=announcer, metrics=metrics)
    )
    handler = Handler(db, coordinator, backends.queue, tasks, faults=faults, metrics=metrics)
    return Pool(
        backends.queue,
        handler,
        lifecycle,
        size=conf.worker.pool_size,
        get_timeout=conf.worker.get_timeout,
        outages=budget,
        # The request threads' time in each backend, when metrics are served.
        record=metrics.backend_time if isinstance(metrics, WorkerMetrics) else None,
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
        cleanup = CleanUp(db, queue, ironic, conf, drift_found=metrics.drift_found).tasks()
        cleanup = faults.periodic(cleanup)
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
        firewall.notifier.ready()
        yield pool
