"""The shutdown flag and the signals that set it (inspector.lifecycle)."""

import logging
import signal
import subprocess
import sys
import threading
import time

from inspector import lifecycle as lifecycle_module
from inspector.lifecycle import FORCED_EXIT_STATUS, Lifecycle


def eventually(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # polling a condition with a deadline
    return True


def test_a_first_signal_asks_for_a_graceful_stop(caplog, monkeypatch):
    lifecycle = Lifecycle()
    exits: list[int] = []
    monkeypatch.setattr(lifecycle_module.os, "_exit", exits.append)
    caplog.set_level(logging.INFO, logger=lifecycle_module.LOG.name)
    lifecycle._on_signal(signal.SIGTERM, None)
    assert lifecycle.shutdown.wait(5)
    assert (lifecycle.reason, lifecycle.exit_status) == ("received SIGTERM", 0)
    # The flag first, then the line, from the handler's thread: waited for.
    assert eventually(lambda: "Stopping: received SIGTERM" in caplog.text)
    assert exits == []
    lifecycle._on_signal(signal.SIGINT, None)
    assert exits == [FORCED_EXIT_STATUS]


def test_a_second_signal_while_the_first_is_logged_exits_at_once(caplog, monkeypatch):
    """A second signal whose handler runs inside the first one's, while its "Stopping"
    line is being written (what a test or an operator waits for before signalling
    again), finds the flag set: it exits at once instead of counting as a first."""
    lifecycle = Lifecycle()
    exits: list[int] = []
    monkeypatch.setattr(lifecycle_module.os, "_exit", exits.append)
    caplog.set_level(logging.INFO, logger=lifecycle_module.LOG.name)
    nested: list[bool] = []

    class SecondSignal(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Stopping") and not nested:
                nested.append(lifecycle.shutdown.is_set())
                lifecycle._on_signal(signal.SIGTERM, None)

    handler = SecondSignal()
    lifecycle_module.LOG.addHandler(handler)
    try:
        lifecycle._on_signal(signal.SIGTERM, None)
        assert lifecycle.shutdown.wait(5)
        assert eventually(lambda: exits), "the second signal, while the line is written"
    finally:
        lifecycle_module.LOG.removeHandler(handler)
    assert nested == [True], "the line was written before the flag was set"
    assert exits == [FORCED_EXIT_STATUS]
    # The capture's handler (the root's) gets the line after the nested one returned,
    # in the stopping thread: waited for.
    assert eventually(lambda: "Stopping:" in caplog.text)
    assert caplog.text.count("Stopping:") == 1


def test_the_first_reason_and_status_win():
    lifecycle = Lifecycle()
    lifecycle.stop("gave up on the database", exit_status=1)
    lifecycle.stop("received SIGTERM")
    assert (lifecycle.reason, lifecycle.exit_status) == ("gave up on the database", 1)


def test_a_signal_that_comes_while_the_main_thread_is_inside_the_wait_is_not_lost(caplog):
    """The handler runs in the main thread between two bytecodes, maybe inside
    shutdown.wait() while it holds the Event's lock, which is not reentrant: a handler
    that set the Event itself would wait for it forever (the process then ignored
    SIGTERM). Here a thread holds that lock, as the waiting main thread would, and is
    signalled: the handler returns, and the flag is set once the lock is free."""
    lifecycle = Lifecycle()
    caplog.set_level(logging.INFO, logger=lifecycle_module.LOG.name)
    returned = threading.Event()

    def main_thread_inside_the_wait() -> None:
        with lifecycle.shutdown._cond:
            lifecycle._on_signal(signal.SIGTERM, None)
            returned.set()

    thread = threading.Thread(target=main_thread_inside_the_wait, daemon=True)
    thread.start()
    assert returned.wait(5), "the signal handler waited for the lock its thread holds"
    assert lifecycle.shutdown.wait(5)
    assert lifecycle.reason == "received SIGTERM"
    # Its line is written before the test ends (its capture then closes).
    assert eventually(lambda: "Stopping: received SIGTERM" in caplog.text)


def test_a_stop_that_hangs_logs_every_threads_stack(caplog):
    """A service process still stopping a while after it was asked says where each of
    its threads is: the stack of the one that holds the stop up is in the log."""
    lifecycle = Lifecycle()
    lifecycle._slow_stop_after = 0.05  # what install_signal_handlers sets
    caplog.set_level(logging.INFO, logger=lifecycle_module.LOG.name)
    release = threading.Event()

    def stuck_in_the_stop() -> None:
        release.wait(30)

    thread = threading.Thread(target=stuck_in_the_stop, name="stuck-one", daemon=True)
    thread.start()
    try:
        lifecycle.stop("received SIGTERM")
        _join_reporters()  # every stack is logged (the test's own shows its source lines)
    finally:
        release.set()
    assert "Still stopping 0 s after it was asked (received SIGTERM)" in caplog.text
    stacks = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Thread ")]
    stuck = [m for m in stacks if m.startswith("Thread stuck-one:")]
    assert len(stuck) == 1 and "in stuck_in_the_stop" in stuck[0], stacks


def test_a_stop_that_finishes_in_time_logs_no_stacks(caplog):
    lifecycle = Lifecycle()
    lifecycle._slow_stop_after = 0.2
    caplog.set_level(logging.INFO, logger=lifecycle_module.LOG.name)
    lifecycle.stop("received SIGTERM")
    assert lifecycle.finished() == "received SIGTERM"
    _join_reporters()
    assert "Still stopping" not in caplog.text


def _join_reporters() -> None:
    """Wait for the slow-stop reporters to end (their lines logged, or nothing to say)."""
    for thread in [t for t in threading.enumerate() if t.name == "slow-stop"]:
        thread.join(5)
        assert not thread.is_alive()


#: A main thread waiting for the stop while another thread receives the SIGTERM.
_SIGNAL_TO_ANOTHER_THREAD = """
import signal, sys, threading
from inspector.lifecycle import Lifecycle

lifecycle = Lifecycle()
lifecycle.install_signal_handlers(slow_stop_after=None)

def another_thread():
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

threading.Timer(0.2, another_thread).start()
lifecycle.wait_for_stop()
print(lifecycle.reason)
"""


def test_a_sigterm_received_by_another_thread_ends_the_main_threads_wait():
    """Python runs handlers in the main thread only, and a signal given to another
    thread interrupts none of the main thread's waits: an untimed wait never ended."""
    result = subprocess.run(
        [sys.executable, "-c", _SIGNAL_TO_ANOTHER_THREAD],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "received SIGTERM"
