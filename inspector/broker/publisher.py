"""Publishing to a topic exchange that the consumers own, with proof of delivery: the
exchange must exist (declared passively, never made), the message must reach at least
one queue (`mandatory`) and the broker must confirm it (publisher confirms). Otherwise
NotDelivered: unlike oslo.messaging's Notifier, which logs and drops what it cannot
send, the caller keeps the message and retries it.

The kombu half of the `messaging` notification driver (inspector.notifications.messaging,
which may not import kombu).
"""

import contextlib
import threading
from typing import Any

import kombu

from inspector.broker import transports
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import InspectorError

#: Seconds a connection attempt, one read or write, or a confirm may take: a hung broker
#: fails the send after this (it is retried later), never holding the sender for ever.
TIMEOUT = 10.0


class NotDelivered(InspectorError):
    """The broker did not take the notification into a queue."""

    retryable = True


class ConfirmedPublisher:
    """One connection (made on first use, dropped after a failure) to publish on."""

    def __init__(self, url: str, *, exchange: str, tls: Tls = DEFAULT_TLS) -> None:
        self.url = url
        #: kombu's TLS options ([oslo_messaging_rabbit], broker.tls), checked now.
        tls.kombu_ssl(url)
        self.tls = tls
        self.exchange_name = exchange
        self._guard = threading.Lock()
        self._connection: kombu.Connection | None = None

    def _connect(self) -> kombu.Connection:
        if self._connection is None:
            options: dict[str, Any] = (
                {"confirm_publish": True, "read_timeout": TIMEOUT, "write_timeout": TIMEOUT}
                if self.url.startswith("amqp")
                else {"socket_timeout": TIMEOUT, "socket_connect_timeout": TIMEOUT}
            )
            connection = kombu.Connection(
                self.url,
                connect_timeout=TIMEOUT,
                transport_options=options,
                ssl=self.tls.kombu_ssl(self.url) or False,
            )
            connection.ensure_connection(max_retries=0)
            self._connection = connection
        return self._connection

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # a broken connection, being discarded
                connection.release()

    def close(self) -> None:
        with self._guard:
            self._drop()

    def publish(self, body: dict[str, Any], routing_keys: list[str]) -> None:
        """body (serialised as JSON) to the exchange under each routing key, each
        delivered to a queue; NotDelivered otherwise."""
        with self._guard:
            try:
                self._publish(body, routing_keys)
            except NotDelivered:
                raise
            except Exception as exc:  # kombu, amqp and socket errors alike
                self._drop()
                raise NotDelivered(
                    f"notification not published to {transports.redact(self.url)} "
                    f"exchange {self.exchange_name}: {exc}"
                ) from exc

    def _publish(self, body: dict[str, Any], routing_keys: list[str]) -> None:
        connection = self._connect()
        channel = connection.default_channel
        exchange = kombu.Exchange(self.exchange_name, type="topic", channel=channel)
        exchange.declare(passive=True)  # it is the consumers' exchange: never ours to make
        returned: list[Any] = []
        producer = kombu.Producer(
            channel,
            exchange=exchange,
            auto_declare=False,
            on_return=lambda *args: returned.append(args),
        )
        for routing_key in routing_keys:
            producer.publish(
                body,
                routing_key=routing_key,
                serializer="json",
                mandatory=True,
                retry=False,
                timeout=TIMEOUT,
                confirm_timeout=TIMEOUT,
            )
            # With publisher confirms, publish() waits for the broker's ack, and a
            # returned (unroutable) message arrives before it: `returned` is final here.
            if returned:
                raise NotDelivered(
                    f"no queue is bound to exchange {self.exchange_name} for "
                    f"{routing_key}: the notification would be dropped"
                )
