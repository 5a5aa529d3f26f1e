"""The process-wide shutdown flag and the signals that set it.

The first SIGTERM or SIGINT asks for a graceful stop; a second one exits at once.
Every wait in the process is an interruptible wait on `Lifecycle.shutdown`.
"""

import logging
import os
import signal
import threading
from types import FrameType

LOG = logging.getLogger(__name__)

#: Exit status of a process killed by a second signal (like a shell: 128 + SIGTERM).
FORCED_EXIT_STATUS = 128 + signal.SIGTERM


class Lifecycle:
    """Owns the shutdown event; built once per process by the command and passed down."""

    def __init__(self) -> None:
        self.shutdown = threading.Event()
        self.exit_status = 0
        self.reason: str | None = None

    def stop(self, reason: str, exit_status: int = 0) -> None:
        """Ask the whole process to stop; the first reason and status win."""
        if not self.shutdown.is_set():
            self.reason = reason
            self.exit_status = exit_status
            LOG.info("Stopping: %s", reason)
        self.shutdown.set()

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when shutdown was requested (stop what you do)."""
        return self.shutdown.wait(seconds)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.shutdown.is_set():
            LOG.warning("Second %s: exiting at once", name)
            os._exit(FORCED_EXIT_STATUS)
        self.stop(f"received {name}")

    def install_signal_handlers(self) -> None:
        """Route SIGTERM and SIGINT to the shutdown flag (call from the main thread)."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
