"""The process-wide shutdown flag, the signals that set it, the outage budget, and the
heap settled once start-up is over.

The first SIGTERM or SIGINT asks for a graceful stop; a second one exits at once.
Every wait in the process is an interruptible wait on `Lifecycle.shutdown`. A backend
that stays unreachable past its retry budget stops the process with a non-zero status.
"""

import _thread
import dataclasses
import gc
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

from inspector import errors

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: Exit status of a process killed by a second signal (like a shell: 128 + SIGTERM).
FORCED_EXIT_STATUS = 128 + signal.SIGTERM
#: Seconds after a stop was asked at which a service process still stopping logs what
#: each of its threads is doing: a stop that hangs is a bug, and its stacks say where.
SLOW_STOP_AFTER = 10.0
#: Seconds between two wake-ups of a main thread that waits for the stop (see
#: `wait_for_stop`).
SIGNAL_CHECK = 0.5


class Lifecycle:
    """Owns the shutdown event; built once per process by the command and passed down."""

    def __init__(self) -> None:
        self.shutdown = threading.Event()
        #: A signal was received (set by the handler itself, which takes no lock).
        self._signalled = False
        self.exit_status = 0
        self.reason: str | None = None
        #: Set by `finished` once the process is done stopping.
        self.done = threading.Event()
        self._slow_stop_after: float | None = None

    def stop(self, reason: str, exit_status: int = 0) -> None:
        """Ask the whole process to stop; the first reason and status win."""
        if self.shutdown.is_set():
            return
        self.reason = reason
        self.exit_status = exit_status
        # The flag before the line: a second signal that comes while the line is being
        # written runs its handler inside this one, and must find the flag set (else it
        # counts as a first one, and the process does not exit at once).
        self.shutdown.set()
        LOG.info("Stopping: %s", reason)
        if self._slow_stop_after is not None:
            threading.Thread(
                target=self._report_slow_stop,
                args=(self._slow_stop_after,),
                name="slow-stop",
                daemon=True,
            ).start()

    def finished(self) -> str | None:
        """The process is done stopping: no stacks to report. Returns the reason."""
        self.done.set()
        return self.reason

    def _report_slow_stop(self, after: float) -> None:
        if self.done.wait(after):
            return
        frames = sys._current_frames()
        stacks = [
            (thread.name, frames[thread.ident])
            for thread in threading.enumerate()
            if thread.ident in frames and thread.ident != threading.get_ident()
        ]
        LOG.warning(
            "Still stopping %.0f s after it was asked (%s); the stacks of its %d threads follow",
            after,
            self.reason,
            len(stacks),
        )
        for name, frame in stacks:
            LOG.warning("Thread %s:\n%s", name, "".join(traceback.format_stack(frame)).rstrip())

    def wait_for_stop(self) -> None:
        """Wait, in the main thread, until the stop is asked. Python runs a signal's
        handler in the main thread only, and a signal the kernel gave another thread of
        the process interrupts no wait of the main thread: an untimed wait would hold
        that SIGTERM (the process seemingly deaf to it) until some other signal came.
        Waking every SIGNAL_CHECK seconds runs it."""
        while not self.shutdown.wait(SIGNAL_CHECK):
            pass

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True when shutdown was requested (stop what you do)."""
        return self.shutdown.wait(seconds)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self._signalled or self.shutdown.is_set():
            LOG.warning("Second %s: exiting at once", name)
            os._exit(FORCED_EXIT_STATUS)
        self._signalled = True
        # Not stop() here: the handler runs in the main thread between two of its
        # bytecodes, maybe inside shutdown.wait() while it holds the Event's own lock (not
        # reentrant), which set() would then wait for forever: the signal would be lost.
        # A bare thread (no lock of the threading module taken to start it) sets it.
        _thread.start_new_thread(self.stop, (f"received {name}",))

    def install_signal_handlers(self, slow_stop_after: float | None = SLOW_STOP_AFTER) -> None:
        """Route SIGTERM and SIGINT to the shutdown flag (call from the main thread); a
        stop still under way `slow_stop_after` seconds later logs every thread's stack
        (None: never), until `finished` is called."""
        self._slow_stop_after = slow_stop_after
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)


#: Exit status of a process that gave up on a backend (systemd restarts it).
OUTAGE_EXIT_STATUS = 1


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """A backend's [group] max_retries and retry_interval; max_retries < 0: forever."""

    max_retries: int
    interval: float

    @property
    def budget(self) -> float:
        return float("inf") if self.max_retries < 0 else self.max_retries * self.interval


class Outages:
    """How long each backend has been unreachable, and when to give up on it.

    Callers report failures and successes as they see them; an outage that lasts longer
    than its policy's budget (max_retries x retry_interval) stops the process with a
    message naming the backend. Backends whose client retries on its own (Ironic, the
    queue) give up at once when that client does.
    """

    def __init__(
        self,
        lifecycle: Lifecycle,
        policies: dict[str, RetryPolicy],
        *,
        clock: Callable[[], float] = time.monotonic,
        observer: Callable[[str], None] | None = None,
    ) -> None:
        self.lifecycle = lifecycle
        self.policies = policies
        #: Called with the service's name on each failed attempt (metrics).
        self.observer = observer
        self._clock = clock
        self._guard = threading.Lock()
        self._since: dict[str, float] = {}

    def interval(self, service: str) -> float:
        policy = self.policies.get(service)
        return policy.interval if policy else 1.0

    def failed(self, service: str, message: str) -> None:
        """One more failed attempt on service; gives up when the budget is spent."""
        if self.observer is not None:
            self.observer(service)
        now = self._clock()
        with self._guard:
            since = self._since.setdefault(service, now)
        policy = self.policies.get(service, RetryPolicy(0, 1.0))
        elapsed = now - since
        if elapsed >= policy.budget:
            self._give_up(service, f"{message} (unreachable for {elapsed:.1f} s)")
        else:
            LOG.warning("%s unreachable for %.1f s, retrying: %s", service, elapsed, message)

    def recovered(self, service: str) -> None:
        with self._guard:
            since = self._since.pop(service, None)
        if since is not None:
            LOG.info("%s reachable again after %.1f s", service, self._clock() - since)

    def until_reached(self, service: str, attempt: Callable[[], T]) -> T | None:
        """attempt() again every retry_interval while it raises ServiceUnavailable, within
        service's budget: for start-up, where a backend may still be coming up. Its
        result; None when the process stops meanwhile (a signal, or the budget spent:
        then the process's exit status and reason say so)."""
        while True:
            try:
                result = attempt()
            except errors.ServiceUnavailable as exc:
                self.failed(service, exc.message)
                if self.lifecycle.wait(self.interval(service)):
                    return None
            else:
                self.recovered(service)
                return result

    def give_up(self, service: str, message: str) -> None:
        """Stop the process at once: service's own client gave up retrying."""
        if self.observer is not None:
            self.observer(service)
        self._give_up(service, message)

    def _give_up(self, service: str, message: str) -> None:
        LOG.error("Giving up on %s: %s", service, message)
        self.lifecycle.stop(f"gave up on {service}: {message}", exit_status=OUTAGE_EXIT_STATUS)


def settle_heap() -> int:
    """Once start-up is over: collect its garbage, then move everything still alive out
    of the garbage collector's reach (gc.freeze). A full collection then walks only what
    the process allocated since, instead of stopping every thread for ~100 ms over the
    libraries imported at start (a /v1/continue answer's tail latency). Returns the
    number of objects frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
