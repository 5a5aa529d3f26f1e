"""What the workers announce on the firewall's pub-sub channel (whitelist and blacklist
changes, status requests and answers), the Channel every transport implements, and the
in-process one of `inspector all`. Handlers run on the channel's thread.
"""

import json
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from inspector.errors import InspectorError

LOG = logging.getLogger(__name__)

#: A node's introspection started: {"node_uuid", "macs"} (whitelist).
INTROSPECTION_STARTED = "inspector.introspection.start"
#: A node's introspection ended (finished or error): {"node_uuid"} (whitelist).
INTROSPECTION_ENDED = "inspector.introspection.end"
#: A port was added to or removed from Ironic: {"uuid", "address"} (blacklist).
PORT_ADDED = "inspector.port.add"
PORT_REMOVED = "inspector.port.remove"
#: The firewall leader's view of every Ironic port after each listing, for the other PXE
#: hosts: {"ports": {port UUID: [node UUID, MAC]}, "listed_at": epoch seconds,
#: "full_at": epoch seconds of its last full listing or null, "since": where its next
#: listing of changes starts (ISO 8601, Ironic's UTC) or null}.
PORTS = "inspector.firewall.ports"
#: `inspector status` asks {"request_id"}; every firewall manager answers STATUS.
STATUS_REQUEST = "inspector.firewall.status.request"
STATUS = "inspector.firewall.status"

#: Seconds a stop waits for the listeners (oslo.messaging polls its queue once a second
#: and reconnects in the background). Their threads are daemons: a process exiting
#: does not wait for them, and RabbitMQ drops the queues of a closed connection.
STOP_TIMEOUT = 0.5

Handler = Callable[[str, dict], None]


class Channel:
    """Publish announcements to every subscribed process, this one included."""

    #: URL without a password, for logs and status.
    description = ""

    def __init__(self) -> None:
        self._handlers: list[Handler] = []

    def subscribe(self, handler: Handler) -> None:
        """Call handler(event_type, payload) for every announcement (before start)."""
        self._handlers.append(handler)

    def publish(self, event_type: str, payload: dict) -> None:
        """Send; never raises (a lost announcement is caught up by polling)."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def ready(self, timeout: float) -> bool:
        """Wait up to timeout seconds until this process hears announcements."""
        return True

    def stop(self) -> None:
        raise NotImplementedError

    def deliver(self, event_type: str, payload: Any) -> None:
        for handler in self._handlers:
            try:
                handler(event_type, payload if isinstance(payload, dict) else {})
            except InspectorError as exc:  # our own error: one line (a stack with debug on)
                LOG.error(
                    "Handling the announcement %s failed: %s",
                    event_type,
                    exc.message,
                    exc_info=LOG.isEnabledFor(logging.DEBUG),
                )
            except Exception:
                LOG.exception("Handling the announcement %s failed", event_type)


class LocalChannel(Channel):
    """One process (memory://): announcements delivered in order by one thread."""

    description = "in-process"

    def __init__(self) -> None:
        super().__init__()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def publish(self, event_type: str, payload: dict) -> None:
        # A copy through JSON: what a subscriber gets never aliases the publisher's data,
        # as with a broker.
        self._queue.put((event_type, json.loads(json.dumps(payload))))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="channel", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            self.deliver(*item)

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(STOP_TIMEOUT)
            self._thread = None


class Announcer:
    """What the workers announce; every method returns at once and never raises.

    `wanted()` says whether anything applies the announcements (a firewall with a real
    driver, see firewall.demand); when it says no, nothing is published."""

    def __init__(self, channel: Channel, wanted: Callable[[], bool] = lambda: True) -> None:
        self.channel = channel
        self.wanted = wanted

    def _publish(self, event_type: str, payload: dict) -> None:
        if self.wanted():
            self.channel.publish(event_type, payload)

    def introspection_started(self, node_uuid: str, macs: list[str]) -> None:
        self._publish(INTROSPECTION_STARTED, {"node_uuid": node_uuid, "macs": list(macs)})

    def introspection_ended(self, node_uuid: str) -> None:
        self._publish(INTROSPECTION_ENDED, {"node_uuid": node_uuid})

    def port_added(self, port_uuid: str, address: str) -> None:
        self._publish(PORT_ADDED, {"uuid": port_uuid, "address": address})

    def port_removed(self, port_uuid: str, address: str) -> None:
        self._publish(PORT_REMOVED, {"uuid": port_uuid, "address": address})
