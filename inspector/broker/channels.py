"""The firewall's pub-sub channel on oslo.messaging notifications, and which channel the
configuration selects (`from_conf`); what is announced, the Channel interface and the
in-process channel are inspector.broker.announcements'.

Owns oslo.messaging: none of its objects or exceptions leave this module. Delivery is
best effort: a process that is down, or a broker that is, loses announcements, and the
polling of Ironic and of the store catches up. Handlers run on the channel's thread;
announcements are sent by a thread of their own, so a hung broker never holds the
thread that announces.
"""

import contextlib
import copy
import logging
import queue
import threading
import time
import urllib.parse
import uuid
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from oslo_config import cfg

from inspector.broker.announcements import (
    INTROSPECTION_ENDED,
    INTROSPECTION_STARTED,
    PORT_ADDED,
    PORT_REMOVED,
    STATUS,
    STATUS_REQUEST,
    STOP_TIMEOUT,
    Announcer,
    Channel,
    Handler,
    LocalChannel,
)
from inspector.broker.tls import Tls

if TYPE_CHECKING:  # imported at run time only by a process with a broker channel
    import oslo_messaging


__all__ = [
    "INTROSPECTION_ENDED",
    "INTROSPECTION_STARTED",
    "PORT_ADDED",
    "PORT_REMOVED",
    "STATUS",
    "STATUS_REQUEST",
    "Announcer",
    "Channel",
    "Handler",
    "LocalChannel",
    "MessagingChannel",
    "channel_url",
    "from_conf",
]

LOG = logging.getLogger(__name__)

#: Publisher id of our notifications.
PUBLISHER = "inspector"
#: Announcements waiting for the sending thread at most; more are dropped (and logged)
#: while the broker does not take them.
MAX_PENDING = 1000


def _oslo_messaging() -> ModuleType:
    # oslo.messaging needs oslo.service, which pulls in eventlet; eventlet warns on
    # import even though nothing here uses it (no monkey patching, threading executor).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
        import oslo_messaging  # noqa: PLC0415 - only processes with a broker channel
        import oslo_messaging.opts  # noqa: PLC0415

    return oslo_messaging


class _Endpoint:
    """oslo.messaging's notification endpoint: info-priority notifications only."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def info(
        self,
        ctxt: dict[str, Any],
        publisher_id: str,
        event_type: str,
        payload: dict[str, Any],
        metadata: dict[str, Any],
    ) -> None:
        self.channel.deliver(event_type, payload)


class _Drain:
    """Consumes the queue the notifier declares for nobody (oslo.messaging keeps every
    notification there until someone reads it), so that it stays empty."""

    def info(
        self,
        ctxt: dict[str, Any],
        publisher_id: str,
        event_type: str,
        payload: dict[str, Any],
        metadata: dict[str, Any],
    ) -> None:
        return None


class MessagingChannel(Channel):
    """oslo.messaging notifications on `topic` in the exchange `inspector`.

    Each process listens on its own queue (`<topic>.<host>.<id>`, deleted when the
    process disconnects, killed or not). With `ironic_topic`, a per-host queue
    (`<topic>.<host>.ironic`, which survives restarts) also receives Ironic's versioned
    notifications from `ironic_exchange`; it is declared as Ironic declares its own
    exchange, not auto-deleted.
    """

    def __init__(
        self,
        url: str,
        *,
        topic: str,
        host: str,
        config_files: Sequence[str] = (),
        ironic_exchange: str = "ironic",
        ironic_topic: str = "",
        rabbit_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.url = url
        self.topic = topic
        self.host = host
        self.description = _redact(url)
        self._om = _oslo_messaging()
        self._config_files = list(config_files)
        #: [oslo_messaging_rabbit] values that win over the files' (TLS: broker.tls).
        self._rabbit_options = dict(rabbit_options or {})
        # Ours: auto-deleted exchange and queues (no queue of a killed process stays).
        self._ours = self._transport(auto_delete=True)
        self._notifier = self._om.Notifier(
            self._ours,
            publisher_id=PUBLISHER,
            driver="messagingv2",
            topics=[topic],
            # Publishing must not block a worker while the broker is down.
            retry=0,
        )
        self._pending: queue.Queue = queue.Queue(MAX_PENDING)
        threading.Thread(target=self._send_pending, name="channel-publish", daemon=True).start()
        self._started: list = []
        self._listening = threading.Event()
        self._ironic = None
        own = self._om.Target(topic=topic, exchange="inspector")
        self._listeners = [
            self._listener(self._ours, [own], _Endpoint(self), f"{topic}.{host}.{uuid.uuid4()}"),
            self._listener(self._ours, [own], _Drain(), None),
        ]
        if ironic_topic:
            self._ironic = self._transport(auto_delete=False)
            target = self._om.Target(topic=ironic_topic, exchange=ironic_exchange)
            self._listeners.append(
                self._listener(self._ironic, [target], _Endpoint(self), f"{topic}.{host}.ironic")
            )

    def _transport(self, *, auto_delete: bool) -> "oslo_messaging.Transport":
        """A transport on a ConfigOpts of its own: the deployer's [oslo_messaging_*]
        options from our configuration files, the TLS options as our own configuration
        has them (its directories included), and the auto-delete flag we need."""
        conf = cfg.ConfigOpts()
        args = [arg for path in self._config_files for arg in ("--config-file", path)]
        conf(args, project="inspector", default_config_files=[], default_config_dirs=[])
        for group, options in self._om.opts.list_opts():
            conf.register_opts(options, group=None if group == "DEFAULT" else group)
        for name, value in self._rabbit_options.items():
            conf.set_override(name, value, group="oslo_messaging_rabbit")
        conf.set_override("amqp_auto_delete", auto_delete, group="oslo_messaging_rabbit")
        conf.set_override("control_exchange", "inspector")
        return self._om.get_notification_transport(conf, url=self.url)

    def _listener(
        self,
        transport: "oslo_messaging.Transport",
        targets: list["oslo_messaging.Target"],
        endpoint: _Endpoint | _Drain,
        pool: str | None,
    ) -> "oslo_messaging.MessageHandlingServer":
        return self._om.get_notification_listener(
            transport, targets, [endpoint], executor="threading", pool=pool
        )

    def publish(self, event_type: str, payload: dict) -> None:
        """Hand the announcement to the sending thread; returns at once."""
        try:
            self._pending.put_nowait((event_type, copy.deepcopy(payload)))
        except queue.Full:
            LOG.warning(
                "Cannot announce %s on %s: %d announcements wait for the broker already",
                event_type,
                self.description,
                MAX_PENDING,
            )

    def _send_pending(self) -> None:
        # The notifier's socket waits are bounded by oslo.messaging's
        # [oslo_messaging_rabbit] heartbeat_timeout_threshold; retry=0: one attempt each.
        while (item := self._pending.get()) is not None:
            event_type, payload = item
            try:
                self._notifier.info({}, event_type, payload)
            except Exception as exc:  # oslo.messaging logs delivery failures and returns
                LOG.warning("Cannot announce %s on %s: %s", event_type, self.description, exc)

    def start(self) -> None:
        # In a thread: a listener's start waits until the broker answers, and a worker
        # must not wait for its channel (polling covers for it meanwhile).
        threading.Thread(target=self._listen, name="channel-start", daemon=True).start()

    def _stop(self, listener: "oslo_messaging.MessageHandlingServer") -> None:
        try:
            listener.stop()
            listener.wait()
        except Exception as exc:
            LOG.warning("Stopping a listener on %s: %s", self.description, exc)

    def _listen(self) -> None:
        for listener in self._listeners:
            try:
                listener.start()
            except Exception as exc:
                LOG.error("Cannot listen on %s: %s (polling only)", self.description, exc)
                return
            self._started.append(listener)
        self._listening.set()
        LOG.info("Listening to the firewall channel on %s", self.description)

    def ready(self, timeout: float) -> bool:
        return self._listening.wait(timeout)

    def stop(self) -> None:
        with contextlib.suppress(queue.Full):  # a sender stuck on the broker: a daemon
            self._pending.put_nowait(None)
        # In parallel: each listener takes up to one poll (about a second) to stop.
        stoppers = [
            threading.Thread(target=self._stop, args=(listener,), daemon=True)
            for listener in self._started
        ]
        for stopper in stoppers:
            stopper.start()
        deadline = time.monotonic() + STOP_TIMEOUT
        for stopper in stoppers:
            stopper.join(max(0.0, deadline - time.monotonic()))
        if any(stopper.is_alive() for stopper in stoppers):
            LOG.debug("Listeners on %s still stopping: leaving them", self.description)
            return
        for transport in (self._ours, self._ironic):
            if transport is not None:
                transport.cleanup()


#: Queue URL schemes and the oslo.messaging URL scheme of the same broker (amqps: rabbit
#: with [oslo_messaging_rabbit] ssl turned on, see from_conf).
_BROKER_SCHEMES = {"amqp": "rabbit", "pyamqp": "rabbit", "rabbit": "rabbit", "amqps": "rabbit"}
#: RabbitMQ's TLS port, the one an amqps:// URL without a port means (oslo.messaging's
#: rabbit:// means 5672 whatever the ssl option says).
AMQPS_PORT = 5671


def channel_url(conf: cfg.ConfigOpts) -> str | None:
    """The channel's URL: [firewall] channel_url, else the work queue's RabbitMQ as an
    oslo.messaging URL, memory:// for an in-process queue; None when there is none."""
    url = conf.firewall.channel_url or conf.queue.transport_url
    scheme, sep, rest = url.partition("://")
    if scheme == "memory":
        return "memory://"
    if not conf.firewall.channel_url:
        if scheme not in _BROKER_SCHEMES:
            return None
        if scheme == "amqps":
            rest = _with_port(rest, AMQPS_PORT)
        url = f"{_BROKER_SCHEMES[scheme]}{sep}{rest}"
    return url


def _with_port(rest: str, port: int) -> str:
    """rest (a URL after its scheme) with `port` when its one host has none."""
    parts = urllib.parse.urlsplit(f"//{rest}")
    if "," in parts.netloc or parts.port is not None or not parts.hostname:
        return rest
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.netloc}:{port}"))[2:]


def _rabbit_options(conf: cfg.ConfigOpts) -> dict[str, Any]:
    """[oslo_messaging_rabbit]'s TLS options for the channel's transports; on with an
    amqps:// queue URL that the channel follows."""
    follows_amqps = not conf.firewall.channel_url and conf.queue.transport_url.startswith(
        "amqps://"
    )
    return Tls.from_conf(conf).oslo_messaging_options(force=follows_amqps)


def from_conf(conf: cfg.ConfigOpts, *, host: str, ironic: bool = True) -> Channel | None:
    """The configured channel (not started), or None when it is disabled or there is
    no broker to carry it (a Redis queue without [firewall] channel_url)."""
    if not conf.firewall.channel_enabled:
        return None
    url = channel_url(conf)
    if url is None:
        LOG.warning(
            "No pub-sub channel for the firewall: [queue] transport_url is not RabbitMQ "
            "and [firewall] channel_url is not set; the lists come from polling only"
        )
        return None
    if url == "memory://":
        return LocalChannel()
    return MessagingChannel(
        url,
        topic=conf.firewall.channel_topic,
        host=host,
        config_files=list(conf.config_file or ()),
        ironic_exchange=conf.firewall.ironic_exchange,
        ironic_topic=conf.firewall.ironic_topic if ironic else "",
        rabbit_options=_rabbit_options(conf),
    )


def _redact(url: str) -> str:
    scheme, _, rest = url.partition("://")
    credentials, at, location = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{location}"
