"""Notification drivers: each `send(payload)` returns once the receiver accepted the
notification and raises DeliveryFailed otherwise (the sender retries later)."""

import json
import logging
from typing import Any, Protocol

import requests

from inspector.errors import InspectorError

LOG = logging.getLogger(__name__)


class DeliveryFailed(InspectorError):
    """The receiver did not accept the notification (yet)."""

    retryable = True


class Driver(Protocol):
    name: str

    def send(self, payload: dict[str, Any]) -> None: ...


class HttpDriver:
    """POST the payload as JSON; any 2xx accepts it. The payload's `id` is stable
    across retries, and also sent as the Idempotency-Key header, for receivers that
    deduplicate."""

    name = "http"

    def __init__(self, endpoint: str, timeout: float) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._session = requests.Session()

    def send(self, payload: dict[str, Any]) -> None:
        try:
            answer = self._session.post(
                self.endpoint,
                data=json.dumps(payload),
                headers={"Content-Type": "application/json", "Idempotency-Key": payload["id"]},
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            raise DeliveryFailed(f"POST {self.endpoint}: {exc}") from exc
        if not 200 <= answer.status_code < 300:
            raise DeliveryFailed(f"POST {self.endpoint}: HTTP {answer.status_code}")


class LogDriver:
    """Write the notification to the log (for trying things out)."""

    name = "log"

    def send(self, payload: dict[str, Any]) -> None:
        LOG.info("Notification %s: %s", payload["event_type"], json.dumps(payload))
