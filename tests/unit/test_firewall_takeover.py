"""A new firewall leader whose driver cannot expire anything (dnsmasq) opens only once the
previous holder's close is certain (its watchdog plus the close bound), on a fake clock;
the start-up checks of the watchdog; and the firewall loop's WATCHDOG=1, said only while
the loop makes progress."""

import math
import threading

import pytest

from inspector.cmd import wiring
from inspector.errors import ConfigError
from inspector.firewall import takeover
from inspector.firewall.drivers.dnsmasq import DnsmasqDriver
from inspector.firewall.manager import FirewallManager
from inspector.lifecycle import Lifecycle
from inspector.systemd import Notifier
from tests.fakes.clock import Clock
from tests.integration.cluster import wait_for
from tests.unit.test_firewall_manager import RecordingDriver

DELAY = 15.5


class ClockedLeadership:
    """A leadership on the fake clock: each wait passes the time it was asked for; it is
    valid until `ends`."""

    def __init__(self, clock: Clock, ends: float = math.inf) -> None:
        self.clock, self.ends, self.term = clock, ends, 4
        self.waits: list[float] = []

    def valid(self) -> bool:
        return self.clock.now < self.ends

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.clock.now = min(self.clock.now + seconds, self.ends)
        return not self.valid()

    def trusted_until(self) -> float:
        return math.inf


class TimedDriver(RecordingDriver):
    """A driver that cannot expire anything; records when (fake clock) it opened."""

    expiry_resolution = None

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.opened_at: list[float] = []

    def _set(self, rules):
        if rules.open and not (self.state and self.state.open):
            self.opened_at.append(self.clock.now)
        super()._set(rules)


def leader(clock: Clock, delay: float = DELAY, **options):
    driver = TimedDriver(clock)
    manager = FirewallManager(
        driver,
        Lifecycle(),
        deny_unknown=False,
        lease_seconds=3.0,
        refresh=0.5,
        takeover_delay=delay,
        clock=clock,
        **options,
    )
    manager.close_at_start()
    return manager, driver


def test_a_new_leader_opens_only_after_the_delay():
    clock = Clock()
    manager, driver = leader(clock)
    polled = []
    manager.watch(manager.whitelist, lambda: polled.append(clock.now) or {}, 15.0)
    manager.lead(ClockedLeadership(clock, ends=20.0))
    assert driver.opened_at == [DELAY]
    # The whitelist read once the wait is over, for the state it opens with.
    assert polled == [DELAY]
    assert not driver.is_open()  # closed again when the leadership ended


def test_a_leadership_ended_during_the_delay_never_opens(caplog):
    clock = Clock()
    manager, driver = leader(clock)
    leadership = ClockedLeadership(clock, ends=DELAY - 1)
    with caplog.at_level("INFO", logger="inspector.firewall"):
        manager.lead(leadership)
    assert driver.opened_at == []
    assert "opening the PXE service in 15.5 s" in caplog.text
    assert "term 4 ended before the PXE service opened" in caplog.text


def test_a_driver_that_expires_by_itself_opens_at_once():
    clock = Clock()
    manager, driver = leader(clock, delay=0.0)
    manager.lead(ClockedLeadership(clock, ends=2.0))
    assert driver.opened_at == [0.0]


def test_the_delay_is_the_watchdog_the_close_bound_and_a_refresh(tmp_path):
    dnsmasq = DnsmasqDriver(hostsdir=str(tmp_path))
    options = {"watchdog_timeout": 10.0, "close_timeout": 5.0, "refresh": 0.5}
    assert takeover.delay(dnsmasq, lease_seconds=3.0, **options) == DELAY
    # nftables, iptables: the leader's rules expire in the kernel before its lease does.
    expiring = RecordingDriver()
    expiring.expiry_resolution = 1.0
    assert takeover.delay(expiring, lease_seconds=3.0, **options) == 0.0
    # One process (an in-process DLM), one host: no other leader to wait for.
    assert takeover.delay(dnsmasq, lease_seconds=math.inf, **options) == 0.0
    assert takeover.delay(dnsmasq, lease_seconds=3.0, single_host=True, **options) == 0.0


def test_the_wiring_gives_a_dnsmasq_manager_its_delay_by_default(conf, tmp_path):
    conf.set_override("driver", "dnsmasq", "pxe_filter")
    conf.set_override("dhcp_hostsdir", str(tmp_path), "dnsmasq_pxe_filter")
    conf.set_override("backend_url", "redis://127.0.0.1:1", "coordination")
    assert wiring.closed_firewall(conf, Lifecycle()).takeover_delay == DELAY


def test_the_watchdog_checks(tmp_path, caplog):
    dnsmasq = DnsmasqDriver(hostsdir=str(tmp_path))
    watched = Notifier("/run/systemd/notify", watchdog_seconds=10.0)
    takeover.check_watchdog(watched, dnsmasq, 10.0)
    assert not caplog.text
    with pytest.raises(ConfigError, match="WatchdogSec=20s is longer than"):
        takeover.check_watchdog(Notifier("/x", watchdog_seconds=20.0), dnsmasq, 10.0)
    takeover.check_watchdog(Notifier(), dnsmasq, 10.0)
    assert "No systemd watchdog" in caplog.text
    caplog.clear()
    expiring = RecordingDriver()
    expiring.expiry_resolution = 1.0
    takeover.check_watchdog(Notifier("/x", watchdog_seconds=20.0), expiring, 10.0)
    assert not caplog.text


# The firewall loop's WATCHDOG=1.


class RecordingNotifier(Notifier):
    def __init__(self) -> None:
        super().__init__("/nowhere", watchdog_seconds=1.0)
        self.sent: list[str] = []

    def send(self, *fields: str) -> bool:
        self.sent.extend(fields)
        return True

    def count(self, field: str) -> int:
        return self.sent.count(field)


class HangingDriver(RecordingDriver):
    """Its applies block while `hang` is set (a hung command, a frozen process)."""

    def __init__(self) -> None:
        super().__init__()
        self.hang = threading.Event()
        self.released = threading.Event()
        self.entered = threading.Event()

    def _replace(self, rules):
        if self.hang.is_set():
            self.entered.set()
            self.released.wait(10)
        super()._replace(rules)


def looping(driver, notifier):
    lifecycle = Lifecycle()
    manager = FirewallManager(
        driver, lifecycle, deny_unknown=False, refresh=0.01, notifier=notifier
    )
    manager.close_at_start()
    manager.start()
    return manager, lifecycle


def _silent_while(notifier: RecordingNotifier, stuck: threading.Event) -> bool:
    """Whether no WATCHDOG=1 came during an observation window in which the firewall
    loop is `stuck` (absence needs a window: nothing else can be waited for)."""
    before = notifier.count("WATCHDOG=1")
    threading.Event().wait(0.3)  # 30 passes of the loop, were it not stuck
    return stuck.is_set() and notifier.count("WATCHDOG=1") == before


def test_a_hung_pass_says_nothing_until_it_returns():
    driver, notifier = HangingDriver(), RecordingNotifier()
    manager, _ = looping(driver, notifier)
    try:
        wait_for(lambda: notifier.count("WATCHDOG=1") >= 3, 5, 0.01, "WATCHDOG=1 said")
        driver.hang.set()
        manager.blacklist.set("port-1", ["52:54:00:00:00:01"])
        manager.wake()
        wait_for(driver.entered.is_set, 5, 0.01, "the loop's apply hanging")
        assert _silent_while(notifier, driver.entered)
        before = notifier.count("WATCHDOG=1")
        driver.hang.clear()
        driver.released.set()
        wait_for(lambda: notifier.count("WATCHDOG=1") > before, 5, 0.01, "WATCHDOG=1 again")
    finally:
        driver.released.set()
        manager.stop()


def test_a_loop_that_cannot_even_close_says_nothing():
    driver, notifier = RecordingDriver(), RecordingNotifier()
    manager, _ = looping(driver, notifier)
    try:
        wait_for(lambda: notifier.count("WATCHDOG=1") >= 1, 5, 0.01, "WATCHDOG=1 said")
        failing = threading.Event()
        driver.failing_applies = driver.failing_closes = 10**6
        manager.blacklist.set("port-1", ["52:54:00:00:00:01"])
        manager.wake()
        wait_for(lambda: manager._cannot_close, 5, 0.01, "a failed close")
        failing.set()
        assert _silent_while(notifier, failing)
        before = notifier.count("WATCHDOG=1")
        # A failed apply that closes is progress (closed is safe); a working one too.
        driver.failing_closes = 0
        wait_for(lambda: notifier.count("WATCHDOG=1") > before, 5, 0.01, "WATCHDOG=1 again")
    finally:
        driver.failing_applies = driver.failing_closes = 0
        manager.stop()


def test_the_firewall_loop_says_stopping_once_on_shutdown():
    driver, notifier = RecordingDriver(), RecordingNotifier()
    manager, lifecycle = looping(driver, notifier)
    wait_for(lambda: notifier.count("WATCHDOG=1") >= 1, 5, 0.01, "WATCHDOG=1 said")
    lifecycle.stop("test")
    wait_for(lambda: "STOPPING=1" in notifier.sent, 5, 0.01, "STOPPING=1 said")
    manager.stop()
    assert notifier.count("STOPPING=1") == 1


def test_a_stamp_that_hangs_neither_stops_the_loop_nor_doubles():
    """The database the stamp writes to hangs: the loop goes on (and says so)."""
    driver, notifier = RecordingDriver(), RecordingNotifier()
    manager, _ = looping(driver, notifier)
    release, calls = threading.Event(), []
    manager.stamp_every(lambda: calls.append(1) or release.wait(10), 0.01)
    try:
        wait_for(lambda: calls, 5, 0.01, "a stamp")
        before = notifier.count("WATCHDOG=1")
        wait_for(lambda: notifier.count("WATCHDOG=1") >= before + 3, 5, 0.01, "WATCHDOG=1")
        assert len(calls) == 1
    finally:
        release.set()
        manager.stop()
