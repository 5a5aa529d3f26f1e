"""Tells systemd how this process is doing (sd_notify): READY=1 once it works, WATCHDOG=1
while its firewall loop makes progress, STOPPING=1 when it stops. A datagram to the
socket systemd names in $NOTIFY_SOCKET (docs/architecture.md says why no library); a
process systemd did not start with one sends nothing. Must not judge the process's
health: its callers decide when to say what.
"""

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping

LOG = logging.getLogger(__name__)


class Notifier:
    """The process's link to systemd; build it once with `from_env`, pass it down."""

    def __init__(
        self,
        address: str | None = None,
        *,
        watchdog_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        #: The socket's path ('@' first: Linux's abstract namespace); None: say nothing.
        self.address = address
        #: The unit's WatchdogSec= ($WATCHDOG_USEC); None when systemd watches nothing.
        self.watchdog_seconds = watchdog_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._last_alive = -float("inf")
        self._failed = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> "Notifier":
        """As systemd's environment says (sd_notify(3), sd_watchdog_enabled(3)): the
        watchdog counts only for the process it names in $WATCHDOG_PID, if it names one."""
        address = environ.get("NOTIFY_SOCKET") or None
        if address is not None and not address.startswith(("/", "@")):
            LOG.warning("NOTIFY_SOCKET=%s is not a Unix socket: not notifying systemd", address)
            address = None
        watchdog = None
        pid = environ.get("WATCHDOG_PID")
        if pid in (None, str(os.getpid())):
            try:
                watchdog = int(environ.get("WATCHDOG_USEC", "")) / 1e6 or None
            except ValueError:
                watchdog = None
        return cls(address, watchdog_seconds=watchdog)

    @property
    def is_watched(self) -> bool:
        """Whether systemd kills this process when it stops saying it is alive."""
        return self.address is not None and self.watchdog_seconds is not None

    def ready(self) -> bool:
        """Start-up is over (a Type=notify unit is started only now)."""
        return self.send("READY=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def alive(self) -> bool:
        """WATCHDOG=1, at most every tenth of the watchdog's time (a loop may call it at
        every pass); nothing without a watchdog."""
        if not self.is_watched:
            return False
        assert self.watchdog_seconds is not None
        now = self._clock()
        if now - self._last_alive < self.watchdog_seconds / 10:
            return False
        self._last_alive = now
        return self.send("WATCHDOG=1")

    def send(self, *fields: str) -> bool:
        """One datagram of `fields` (KEY=value lines); False when not sent. Never blocks:
        systemd reads its socket at once, and a full one is its problem, not ours."""
        if self.address is None:
            return False
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            with self._lock:
                if self._socket is None:
                    self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    self._socket.setblocking(False)
                self._socket.sendto("\n".join(fields).encode(), target)
        except OSError as exc:
            if not self._failed:
                LOG.warning("Cannot notify systemd on %s: %s", self.address, exc)
            self._failed = True
            return False
        if self._failed:
            LOG.info("Notifying systemd on %s again", self.address)
        self._failed = False
        return True

    def close(self) -> None:
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
