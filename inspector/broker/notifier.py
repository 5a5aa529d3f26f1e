"""The `messaging` notification driver: each notification published the way
oslo.messaging's `messagingv2` notifier does on RabbitMQ (the oslo 2.0 envelope on a
topic exchange, routing key `<topic>.info`), so ceilometer-style consumers read it as
any OpenStack notification.

Unlike oslo.messaging's Notifier, which logs and drops what it cannot send, it reports
failure: the exchange must exist, the message must reach at least one queue
(`mandatory`) and the broker must confirm it (publisher confirms). Otherwise the outbox
keeps the notification and retries it.
"""

import contextlib
import datetime
import json
import threading
import uuid
from typing import Any

import kombu

from inspector.broker import transports
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import InspectorError

#: Seconds a connection attempt or a confirm may take.
TIMEOUT = 10.0


class NotDelivered(InspectorError):
    """The broker did not take the notification into a queue."""

    retryable = True


def envelope(payload: dict[str, Any], publisher_id: str) -> dict[str, str]:
    """oslo.messaging's notification layout (messagingv2), the message serialised inside."""
    message = {
        "message_id": str(uuid.uuid4()),
        "publisher_id": publisher_id,
        "event_type": payload["event_type"],
        "priority": "INFO",
        "payload": payload,
        "timestamp": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f"),
    }
    return {"oslo.version": "2.0", "oslo.message": json.dumps(message)}


class MessagingDriver:
    name = "messaging"

    def __init__(
        self,
        url: str,
        *,
        exchange: str,
        topics: list[str],
        publisher_id: str,
        tls: Tls = DEFAULT_TLS,
    ) -> None:
        self.url = url
        #: kombu's TLS options ([oslo_messaging_rabbit], broker.tls), checked now.
        tls.kombu_ssl(url)
        self.tls = tls
        self.exchange_name = exchange
        self.topics = topics
        self.publisher_id = publisher_id
        self._guard = threading.Lock()
        self._connection: kombu.Connection | None = None

    def _connect(self) -> kombu.Connection:
        if self._connection is None:
            options = {"confirm_publish": True} if self.url.startswith("amqp") else {}
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

    def send(self, payload: dict[str, Any]) -> None:
        body = envelope(payload, self.publisher_id)
        with self._guard:
            try:
                self._publish(body)
            except NotDelivered:
                raise
            except Exception as exc:  # kombu, amqp and socket errors alike
                self._drop()
                raise NotDelivered(
                    f"notification not published to {transports.redact(self.url)} "
                    f"exchange {self.exchange_name}: {exc}"
                ) from exc

    def _publish(self, body: dict[str, str]) -> None:
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
        for topic in self.topics:
            producer.publish(
                body,
                routing_key=f"{topic}.info",
                serializer="json",
                mandatory=True,
                retry=False,
            )
            # With publisher confirms, publish() waits for the broker's ack, and a
            # returned (unroutable) message arrives before it: `returned` is final here.
            if returned:
                raise NotDelivered(
                    f"no queue is bound to exchange {self.exchange_name} for "
                    f"{topic}.info: the notification would be dropped"
                )
