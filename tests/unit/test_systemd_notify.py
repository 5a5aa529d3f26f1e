"""inspector.systemd: what systemd's environment says (sd_notify(3), sd_watchdog_enabled(3))
and the datagrams it receives, on a real Unix datagram socket standing in for systemd's."""

import os
import socket
import uuid

import pytest

from inspector.systemd import Notifier
from tests.fakes.clock import Clock


@pytest.fixture
def systemd(tmp_path):
    """A bound datagram socket: (its path, a function returning what was sent, in order)."""
    path = str(tmp_path / "notify")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(path)
    listener.setblocking(False)

    def received() -> list[str]:
        messages = []
        while True:
            try:
                messages.append(listener.recv(4096).decode())
            except BlockingIOError:
                return messages

    yield path, received
    listener.close()


def test_environment_of_a_watched_service():
    env = {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "10000000"}
    notifier = Notifier.from_env(env)
    assert notifier.address == "/run/systemd/notify"
    assert notifier.watchdog_seconds == 10.0
    assert notifier.is_watched
    # The watchdog is the main process's: our own pid, or no pid named.
    env["WATCHDOG_PID"] = str(os.getpid())
    assert Notifier.from_env(env).watchdog_seconds == 10.0
    env["WATCHDOG_PID"] = "1"
    assert Notifier.from_env(env).watchdog_seconds is None
    assert not Notifier.from_env(env).is_watched


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"WATCHDOG_USEC": "10000000"},  # no socket to tell
        {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "ten"},
        {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "0"},
    ],
)
def test_environment_without_a_watchdog(env):
    notifier = Notifier.from_env(env)
    assert not notifier.is_watched
    assert not notifier.alive()


def test_not_started_by_systemd_says_nothing():
    notifier = Notifier.from_env({})
    assert notifier.address is None
    assert not notifier.ready()
    assert not notifier.stopping()


def test_a_vsock_address_is_refused_with_a_warning(caplog):
    notifier = Notifier.from_env({"NOTIFY_SOCKET": "vsock:2:1234"})
    assert notifier.address is None
    assert "not a Unix socket" in caplog.text


def test_ready_watchdog_and_stopping_reach_the_socket(systemd):
    path, received = systemd
    clock = Clock(100.0)
    notifier = Notifier(path, watchdog_seconds=2.0, clock=clock)
    assert notifier.ready()
    assert notifier.alive()
    # A loop calling at every pass: at most one WATCHDOG=1 per tenth of the watchdog.
    clock.now += 0.1
    assert not notifier.alive()
    clock.now += 0.15
    assert notifier.alive()
    assert notifier.stopping()
    assert received() == ["READY=1", "WATCHDOG=1", "WATCHDOG=1", "STOPPING=1"]
    notifier.close()


def test_an_abstract_socket():
    name = f"inspector-test-{uuid.uuid4().hex}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind("\0" + name)
    try:
        notifier = Notifier.from_env({"NOTIFY_SOCKET": "@" + name, "WATCHDOG_USEC": "1000000"})
        assert notifier.alive()
        assert listener.recv(64) == b"WATCHDOG=1"
        notifier.close()
    finally:
        listener.close()


def test_systemd_gone_is_a_warning_once_never_an_error(systemd, caplog):
    path, received = systemd
    notifier = Notifier(path)
    os.unlink(path)
    assert not notifier.ready()
    assert not notifier.ready()
    assert caplog.text.count("Cannot notify systemd") == 1
    assert received() == []
    notifier.close()
