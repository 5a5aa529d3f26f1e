"""Whether any PXE firewall applies the workers' announcements: a marker that every
worker process with a real driver stamps while it runs, and that the announcers read at
most every few seconds.

With the noop driver on every host (the default) nothing applies the announcements, and
publishing and hearing them cost about a third of the CPU of an introspection
(docs/performance.md); the workers then do not announce, and the firewall lists, which
nobody applies, are left to the polls. A host with a real driver stamps before it runs
for the firewall's leadership, and waits until every announcer has read the stamp when
it was the first (see `Stamper.first`), so no announcement it needs is skipped.
"""

import datetime
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from inspector.errors import InspectorError

LOG = logging.getLogger(__name__)

#: The marker: its holder is the host that stamped last, its `at` when.
MARKER = "firewall-applies"
#: Seconds between two stamps of a process with a real driver.
STAMP_PERIOD = 10.0
#: Seconds a stamp counts: several missed stamps, and clock skew between the hosts.
FRESH = 60.0
#: Seconds an announcer keeps what it read before reading the marker again.
CHECK_PERIOD = 2.0


class Demand:
    """`demand()`: whether to announce. Reads the marker at most every `check_period`
    seconds; when the store cannot be read, announces (a lost announcement only costs a
    poll's delay, a needless one some CPU)."""

    def __init__(
        self,
        store: Any,
        *,
        fresh: float = FRESH,
        check_period: float = CHECK_PERIOD,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.fresh = fresh
        self.check_period = check_period
        self._clock = clock
        self._lock = threading.Lock()
        self._checked: float | None = None
        self._wanted = True

    def __call__(self) -> bool:
        with self._lock:
            now = self._clock()
            if self._checked is not None and now - self._checked < self.check_period:
                return self._wanted
            self._wanted = self._read()
            self._checked = now
            return self._wanted

    def _read(self) -> bool:
        try:
            mark = self.store.mark(MARKER)
        except InspectorError as exc:
            LOG.debug("Cannot read whether a firewall applies announcements: %s", exc)
            return True
        return mark is not None and is_fresh(self.store, mark.at, self.fresh)


def is_fresh(store: Any, at: datetime.datetime, fresh: float) -> bool:
    return (store.clock() - at).total_seconds() < fresh


class Stamper:
    """What a process with a real driver runs: `first()` at start, then `__call__`
    every STAMP_PERIOD (the firewall thread). A stamp that fails is logged: the
    announcers stop announcing once the marker is FRESH seconds old, and the whitelist
    poll covers for them."""

    def __init__(self, store: Any, host: str) -> None:
        self.store = store
        self.host = host

    def first(self) -> float:
        """Stamp; the seconds to wait before running for leadership: CHECK_PERIOD (and
        a little) when no fresh stamp was there before, so that every announcer has read
        this one; else 0."""
        try:
            mark = self.store.mark(MARKER)
            self.store.stamp(MARKER, self.host)
        except InspectorError as exc:
            LOG.warning("Cannot tell the workers that this host applies announcements: %s", exc)
            return 0.0  # waiting would not help: polling covers
        if mark is not None and is_fresh(self.store, mark.at, FRESH):
            return 0.0
        return CHECK_PERIOD + 0.5

    def __call__(self) -> None:
        try:
            self.store.stamp(MARKER, self.host)
        except InspectorError as exc:
            LOG.warning("Cannot tell the workers that this host applies announcements: %s", exc)


class Aside:
    """Runs `call` on a thread of its own and returns at once, one call at a time (one
    still running when the next is due is not doubled): the firewall loop, whose passes
    systemd's watchdog counts, must not wait for a database that hangs."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.call = call
        self._thread: threading.Thread | None = None

    def __call__(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self.call, name="firewall-stamp", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)
