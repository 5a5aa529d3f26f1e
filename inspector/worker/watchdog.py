"""The database watchdog: an idle worker process must notice a database outage too.

One thread pings the store every [database] retry_interval and reports to the outage
budget, which stops the process once the outage lasts longer than the retries allow.
(The DLM is watched by the elections' loops, the queue by the pool's gets.)
"""

import logging
import threading

from inspector.errors import ServiceUnavailable
from inspector.lifecycle import Lifecycle, Outages
from inspector.store import Store

LOG = logging.getLogger(__name__)


class Watchdog:
    def __init__(self, store: Store, lifecycle: Lifecycle, outages: Outages) -> None:
        self.store = store
        self.lifecycle = lifecycle
        self.outages = outages
        self._thread = threading.Thread(target=self._run, name="watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        interval = self.outages.interval("database")
        while not self.lifecycle.wait(interval):
            try:
                self.store.ping()
            except ServiceUnavailable as exc:
                self.outages.failed("database", exc.message)
            else:
                self.outages.recovered("database")
