"""`inspector api|worker|all`: run the service's processes until SIGTERM or Ctrl-C."""

import logging

from oslo_config import cfg

from inspector import conf as config
from inspector import store
from inspector.api import app as app_factory
from inspector.api import server
from inspector.cmd.logs import setup_logging
from inspector.lifecycle import Lifecycle
from inspector.store import schema

LOG = logging.getLogger(__name__)


def add_parsers(commands) -> None:
    api = commands.add_parser("api", help="serve the HTTP API")
    api.set_defaults(run=run_api)
    everything = commands.add_parser(
        "all",
        help="API and workers in one process on embedded defaults (SQLite, "
        "in-process queue and locks, noauth): the first thing to run",
    )
    everything.set_defaults(run=run_all)


def _load(argv, *, embedded: bool) -> cfg.ConfigOpts:
    conf = config.build()
    if embedded:
        conf.set_default("auth_strategy", "noauth")
    conf = config.load(argv, conf=conf)
    setup_logging(conf.debug, conf.log_file)
    return conf


def _serve(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> int:
    app = app_factory.create_app(conf)
    http = server.Server(app, conf.listen_address, conf.listen_port)
    lifecycle.install_signal_handlers()
    http.serve_until(lifecycle)
    LOG.info("Stopped (%s)", lifecycle.reason)
    return lifecycle.exit_status


def run_api(_args, argv) -> int:
    conf = _load(argv, embedded=False)
    return _serve(conf, Lifecycle())


def run_all(_args, argv) -> int:
    conf = _load(argv, embedded=True)
    url = store.database_url(conf)
    old, new = schema.upgrade(url)
    if old != new:
        LOG.info("Database schema upgraded from %s to %s", old or "empty", new)
    return _serve(conf, Lifecycle())
