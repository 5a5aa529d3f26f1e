"""Which drivers [notifications] drivers selects: a plain table of driver name to the
function that builds that driver from the configuration. Builds only: no driver sends
or connects here (the messaging driver connects on its first notification)."""

from collections.abc import Callable

from oslo_config import cfg

from inspector.broker.tls import Tls
from inspector.notifications import messaging
from inspector.notifications.drivers import Driver, HttpDriver, LogDriver

__all__ = ["DRIVERS", "build"]


def _http(conf: cfg.ConfigOpts) -> HttpDriver:
    group = conf.notifications
    return HttpDriver(group.http_endpoint, group.http_timeout)


def _log(conf: cfg.ConfigOpts) -> LogDriver:
    return LogDriver()


def _messaging(conf: cfg.ConfigOpts) -> messaging.MessagingDriver:
    group = conf.notifications
    return messaging.MessagingDriver(
        group.transport_url or conf.queue.transport_url,
        exchange=group.exchange,
        topics=group.topics,
        publisher_id=f"inspector.{conf.host}",
        tls=Tls.from_conf(conf),
    )


#: The driver each name of [notifications] drivers builds (the option's choices are
#: these names: tests/unit/test_notifications.py checks it).
DRIVERS: dict[str, Callable[[cfg.ConfigOpts], Driver]] = {
    "http": _http,
    "log": _log,
    "messaging": _messaging,
}


def build(conf: cfg.ConfigOpts) -> list[Driver]:
    """The drivers [notifications] drivers names, in its order."""
    return [DRIVERS[name](conf) for name in conf.notifications.drivers]
