"""When a firewall leader's openness begins and ends. With a driver whose openness
expires by itself in the kernel (nftables, iptables) it ends at the end of the lease's
trust (open_until), and a new leader opens at once; with any other (dnsmasq) a new leader
opens only once the previous holder's close is certain: systemd's watchdog has killed it
and its unit's `inspector firewall close` ran (docs/firewall.md, "A new leader's wait").
Also the start-up checks of the lease and of the watchdog these count on. Must not open
or close anything.
"""

import logging
import math
from collections.abc import Callable

from inspector.coordination.election import SAFETY, Leadership
from inspector.errors import ConfigError
from inspector.firewall.drivers import Driver
from inspector.systemd import Notifier

LOG = logging.getLogger(__name__)


def expires_by_itself(driver: Driver) -> bool:
    """Whether the leader's openness ends by itself at its lease's end (a kernel expiry)."""
    return driver.expiry_resolution is not None


def check_lease(driver: Driver, lease_seconds: float, refresh: float) -> None:
    """Refuse a lease whose trust the driver's expiry cannot follow (ConfigError)."""
    resolution = driver.expiry_resolution
    if resolution is not None and lease_seconds * SAFETY - resolution < 2 * refresh:
        raise ConfigError(
            f"[coordination] lease_timeout = {lease_seconds:g} s is too short for "
            f"the {driver.name} driver, whose rules expire to {resolution:g} s: "
            f"the leader's rules would expire before each refresh; use a longer lease"
        )


def open_until(driver: Driver, leadership: Leadership) -> float | None:
    """The end of the leadership's trust, rounded down to the driver's resolution (so
    that an unchanged lease is an unchanged rule set); None without expiry."""
    resolution = driver.expiry_resolution
    until = leadership.trusted_until()
    if resolution is None or not math.isfinite(until):
        return None
    step = max(resolution, 0.01)
    return math.floor(until / step) * step


def delay(
    driver: Driver,
    *,
    lease_seconds: float,
    watchdog_timeout: float,
    close_timeout: float,
    refresh: float,
    single_host: bool = False,
) -> float:
    """Seconds a new leader waits after taking the lease before it opens. A previous
    holder that still ran its firewall loop when it last renewed its lease either closes
    by itself before the lease can be taken (its trust ends a fifth of the lease early,
    seen within `refresh`), or stopped making progress (frozen, killed, hung) by then:
    systemd kills it at most `watchdog_timeout` later, and its ExecStopPost= closes it
    within `close_timeout`. No other host in the election (an in-process DLM, or
    [coordination] single_host: systemd closes this host's previous process before it
    starts the next one): none."""
    if expires_by_itself(driver) or single_host or not math.isfinite(lease_seconds):
        return 0.0
    return watchdog_timeout + close_timeout + refresh


def check_watchdog(notifier: Notifier, driver: Driver, watchdog_timeout: float) -> None:
    """Refuse a systemd watchdog longer than the one the other hosts wait for (they would
    open before a frozen leader here is killed); warn when nothing watches a driver that
    cannot close by itself. Raises ConfigError (exit status 2)."""
    if expires_by_itself(driver) or driver.name == "noop":
        return
    watchdog = notifier.watchdog_seconds if notifier.is_watched else None
    if watchdog is None:
        LOG.warning(
            "No systemd watchdog (WatchdogSec= of a Type=notify unit): if this process "
            "freezes while it leads, its %s driver's PXE service stays open, beside the "
            "next leader's once that one's wait is over; run it under the shipped unit",
            driver.name,
        )
        return
    if watchdog > watchdog_timeout + 0.001:
        raise ConfigError(
            f"The unit's WatchdogSec={watchdog:g}s is longer than [pxe_filter] "
            f"watchdog_timeout = {watchdog_timeout:g} s: another host would open before "
            f"systemd kills this process when it freezes; make them equal"
        )


def wait(leadership: Leadership, seconds: float, *, clock: Callable[[], float]) -> bool:
    """Wait `seconds` from now (by `clock`, which the leadership's waits follow) before
    opening; False when the leadership ended meanwhile."""
    if seconds <= 0:
        return True
    since = clock()
    LOG.info(
        "Firewall leader (term %d): opening the PXE service in %.1f s, once the previous "
        "leader is certainly closed",
        leadership.term,
        seconds,
    )
    remaining = seconds
    while remaining > 0:
        if leadership.wait(remaining):
            return False
        remaining = seconds - (clock() - since)
    return True
