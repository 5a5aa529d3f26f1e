"""`inspector api|worker|all`: run the service's processes until SIGTERM or Ctrl-C.

The API (Flask, its middleware, the HTTP server) is imported by the roles that serve it
only: a worker starts without it.
"""

import argparse
import contextlib
import logging

from oslo_config import cfg

from inspector import conf as config
from inspector import services, store
from inspector.api.logs import setup_logging
from inspector.cmd import roles, wiring, worker_wiring
from inspector.errors import ConfigError
from inspector.lifecycle import Lifecycle, settle_heap
from inspector.services import Backends
from inspector.store import schema
from inspector.worker.pool import Pool

LOG = logging.getLogger(__name__)

#: Seconds a running task may still take after SIGTERM before the process gives up on it.
TASK_BOUND = 60.0


def _load(argv: list[str], role: str) -> cfg.ConfigOpts:
    """The configuration of `inspector <role>`, its logging set up, and the role's checks
    (inspector.cmd.roles: what was taken from ironic-inspector's options is logged, a
    configuration the role cannot serve is a ConfigError)."""
    conf = config.load(argv, conf=roles.build(role))
    setup_logging(conf)
    roles.require(conf, role)
    return conf


def _require_schema(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> bool:
    """Start on a schema with every expand revision this release knows (pending contract
    revisions are fine), or on a newer one (a rolling upgrade under way). A database
    still coming up (a host's boot, a fail-over) is waited for within its retry budget
    ([database] max_retries x retry_interval); False when the process stops meanwhile."""
    budget = wiring.outages(conf, lifecycle)
    current = budget.until_reached(
        "database", lambda: schema.current_revision(store.database_url(conf))
    )
    if lifecycle.shutdown.is_set():
        return False
    verdict = schema.compatibility(current)
    if verdict == "newer":
        LOG.warning(
            "The database schema %s is newer than this release's (%s): a rolling upgrade "
            "is under way; upgrade this host too",
            current,
            schema.head_revision(),
        )
    elif verdict != "ok":
        raise ConfigError(verdict)
    return True


def _serve(conf: cfg.ConfigOpts, lifecycle: Lifecycle, backends: Backends) -> None:
    from inspector.api import app as app_factory  # noqa: PLC0415 - api and all only
    from inspector.api import server  # noqa: PLC0415

    app = app_factory.create_app(
        conf, store=backends.store, queue=backends.queue, ironic=backends.ironic
    )
    settle_heap()
    http = server.Server(app, conf.listen_address, conf.listen_port, threads=conf.api.threads)
    http.serve_until(lifecycle)


def _stop_pool(pool: Pool, conf: cfg.ConfigOpts) -> None:
    bound = conf.worker.get_timeout + TASK_BOUND
    if not pool.join(bound):
        LOG.warning("Workers still busy after %.0f s: exiting; their requests come back", bound)


def _stopped(lifecycle: Lifecycle) -> int:
    LOG.info("Stopped (%s)", lifecycle.finished())
    return lifecycle.exit_status


def run_api(_args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv, "api")
    lifecycle = Lifecycle()
    lifecycle.install_signal_handlers()
    if not _require_schema(conf, lifecycle):
        return _stopped(lifecycle)
    _serve(conf, lifecycle, services.build_services(conf, lifecycle))
    return _stopped(lifecycle)


def run_worker(_args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv, "worker")
    lifecycle = Lifecycle()
    lifecycle.install_signal_handlers()
    if not _require_schema(conf, lifecycle):
        return _stopped(lifecycle)
    with (
        contextlib.closing(services.build_services(conf, lifecycle)) as backends,
        worker_wiring.running_pool(conf, lifecycle, backends) as pool,
    ):
        settle_heap()
        lifecycle.wait_for_stop()
        _stop_pool(pool, conf)
    return _stopped(lifecycle)


def run_all(_args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv, "all")
    old, new = schema.upgrade(store.database_url(conf))
    if old != new:
        LOG.info("Database schema upgraded from %s to %s", old or "empty", new)
    lifecycle = Lifecycle()
    lifecycle.install_signal_handlers()
    # One process: the API shares the workers' store, in-process queue and client.
    with (
        contextlib.closing(services.build_services(conf, lifecycle)) as backends,
        worker_wiring.running_pool(conf, lifecycle, backends) as pool,
    ):
        try:
            _serve(conf, lifecycle, backends)
        except BaseException:
            # The pool's threads wait on the shutdown flag: without it, leaving the pool
            # would wait for them forever.
            lifecycle.stop("the API failed", exit_status=1)
            raise
        _stop_pool(pool, conf)
    return _stopped(lifecycle)
