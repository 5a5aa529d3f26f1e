"""The `messaging` notification driver: each notification published the way
oslo.messaging's `messagingv2` notifier does on RabbitMQ (the oslo 2.0 envelope on a
topic exchange, routing key `<topic>.info`), so ceilometer-style consumers read it as
any OpenStack notification.

Unlike oslo.messaging's Notifier, which logs and drops what it cannot send, it reports
failure (NotDelivered: no exchange, no queue bound, no confirm from the broker), and the
outbox keeps the notification and retries it. The publishing itself is the broker's
(inspector.broker.publisher): only the broker imports kombu.
"""

import datetime
import json
import uuid
from typing import Any

from inspector.broker.publisher import ConfirmedPublisher, NotDelivered
from inspector.broker.tls import DEFAULT_TLS, Tls

__all__ = ["MessagingDriver", "NotDelivered", "envelope"]


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
        self.tls = tls
        self.exchange_name = exchange
        self.topics = topics
        self.publisher_id = publisher_id
        self._publisher = ConfirmedPublisher(url, exchange=exchange, tls=tls)

    def close(self) -> None:
        self._publisher.close()

    def send(self, payload: dict[str, Any]) -> None:
        body = envelope(payload, self.publisher_id)
        self._publisher.publish(body, [f"{topic}.info" for topic in self.topics])
