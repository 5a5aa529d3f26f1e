"""The outbox sender: the notifications leader delivers every undelivered notification
to every driver, retrying with a doubling backoff until all accept it; across restarts
too, since the outbox is in the store. At-least-once, each with its stable id.
"""

import logging

from inspector.coordination.election import Leadership
from inspector.errors import InspectorError, ServiceUnavailable
from inspector.lifecycle import Outages
from inspector.notifications.drivers import Driver
from inspector.store import Store

LOG = logging.getLogger(__name__)

#: The singleton kind (group and lease name) of the sender.
KIND = "notifications"
#: Notifications read from the outbox per look.
BATCH = 100


class Sender:
    """Callable body for `Election`: delivers the outbox while the leadership lasts."""

    def __init__(
        self,
        store: Store,
        drivers: list[Driver],
        outages: Outages,
        *,
        poll_interval: float,
        max_backoff: float,
    ) -> None:
        self.store = store
        self.drivers = drivers
        self.outages = outages
        self.poll_interval = poll_interval
        self.max_backoff = max_backoff

    def __call__(self, leadership: Leadership) -> None:
        while leadership.valid():
            try:
                self.deliver_due(leadership)
            except ServiceUnavailable as exc:
                LOG.warning("Outbox not read: %s", exc.message)
                if exc.service:
                    self.outages.failed(exc.service, exc.message)
            if leadership.wait(self.poll_interval):
                return

    def backoff(self, attempts: int) -> float:
        return min(self.max_backoff, self.poll_interval * 2 ** min(attempts, 20))

    def deliver_due(self, leadership: Leadership) -> int:
        """Deliver what is due now; the number delivered."""
        count = 0
        for note in self.store.due_notifications(BATCH):
            leadership.check()
            try:
                for driver in self.drivers:
                    driver.send(note.payload)
            except InspectorError as exc:
                delay = self.backoff(note.attempts)
                LOG.warning(
                    "Notification %s (%s of node %s) not delivered, next attempt in %.1f s: %s",
                    note.id,
                    note.event_type,
                    note.node_uuid,
                    delay,
                    exc.message,
                )
                self.store.postpone_notification(note.id, delay, exc.message)
                continue
            self.store.notification_delivered(note.id)
            count += 1
        return count
