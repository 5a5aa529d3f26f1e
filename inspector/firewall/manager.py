"""The HA PXE firewall of one worker process: closed from the start, open only while this
process is the elected firewall leader and its leadership is valid, closed again before
the leadership's lease is released. Decides whether the PXE port is open; the driver
decides how, the sources keep the lists.

Fail closed: an error, a shutdown (SIGTERM, a backend given up), a lost lease or DLM
all end in the closed rule set; a close that fails is retried, never followed by an
open. A leader that is killed cannot close: its pass rules carry the end of its trust
in the lease (RuleSet.open_until), and the kernel closes them then, before the DLM can
give the lease to another host; with a driver that cannot (dnsmasq) a new leader waits
for the previous one's close (firewall.takeover), and the firewall loop feeds systemd's
watchdog while it progresses: a frozen process is killed, then closed by its unit."""

import logging
import math
import threading
import time
from collections.abc import Callable

from inspector.broker import channels
from inspector.coordination.election import Leadership
from inspector.errors import FirewallError, InspectorError
from inspector.firewall import demand, takeover
from inspector.firewall.drivers import Driver
from inspector.firewall.lists import Feed, ListSource, MacList, PollTarget, PortEvents
from inspector.firewall.observer import Observer
from inspector.firewall.reporting import Reporting
from inspector.firewall.ruleset import RuleSet
from inspector.firewall.sources import Fetched, Poller
from inspector.lifecycle import Lifecycle, Outages
from inspector.systemd import Notifier

LOG = logging.getLogger(__name__)

#: The singleton kind (group `inspector-firewall`, lease `inspector-leader-firewall`).
KIND = "firewall"
#: Failed applies in a row after which the leader gives up (its process stops, exit 1).
MAX_FAILURES = 3
#: Seconds between two applies of an unchanged rule set: the driver then only checks,
#: cheaply, that its hook is still in place (and repairs it), then compacts.
VERIFY_PERIOD = 10.0
#: Seconds a closing manager keeps retrying before it stops the process; below the
#: election's wait for the body (30 s).
CLOSE_BOUND = 20.0


class FirewallManager(Reporting):
    """Owns the desired rule set and every apply; `lead` is the Election's body."""

    def __init__(
        self,
        driver: Driver,
        lifecycle: Lifecycle,
        *,
        deny_unknown: bool,
        host: str = "",
        member: str = "",
        lease_seconds: float = math.inf,
        refresh: float = 0.5,
        retry_interval: float = 1.0,
        pause: Callable[[float], object] | None = None,
        notifier: Notifier | None = None,
        takeover_delay: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.driver = driver
        self.lifecycle = lifecycle
        self.deny_unknown = deny_unknown
        self.host, self.member, self.lease_seconds = host, member, lease_seconds
        #: Seconds between two looks at the leadership (refreshes open_until).
        self.refresh = refresh
        self.retry_interval = retry_interval
        # Waits between two attempts to close: not on the shutdown flag, since closing
        # matters most precisely when it is set.
        self._pause = pause or threading.Event().wait
        #: Told READY=1 by the command, WATCHDOG=1 by the firewall loop, STOPPING=1.
        self.notifier = notifier or Notifier()
        #: Seconds a new leader waits after its election before it opens (takeover.delay).
        self.takeover_delay, self._clock = takeover_delay, clock
        self._cannot_close = False  # the last close failed: the loop makes no progress
        self.observer = Observer()  # told of each rule set applied (the lag)
        self.whitelist, self.blacklist = MacList("whitelist"), MacList("blacklist")
        self.source: ListSource = PortEvents(self.blacklist)  # fill_from
        self.channel: channels.Channel | None = None
        #: Started every `_stamp_period` seconds by the firewall thread (firewall.demand).
        self._stamp: demand.Aside | None = None
        self._stamp_period = math.inf
        self._pollers: list[Poller] = []
        self._whitelist_poller: Poller | None = None
        # One apply at a time; the desired state is read under it too, so once a
        # stepping-down leader cleared its leadership nobody applies an open rule set.
        self._guard = threading.RLock()
        self._leadership: Leadership | None = None
        self._applied: RuleSet | None = None
        self._applied_at: float | None = None
        self._apply_seconds: float | None = None
        self._error: str | None = None
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # -- wiring ---------------------------------------------------------------------------

    def close_at_start(self) -> None:
        """Check the driver and close the PXE port: the first thing a worker does.
        Raises ConfigError or FirewallError when it cannot: the process must not run."""
        takeover.check_lease(self.driver, self.lease_seconds, self.refresh)
        self.driver.check()
        with self._guard:
            self.driver.close()
        LOG.info("PXE service closed (%s driver)", self.driver.name)

    def watch(
        self,
        target: PollTarget[Fetched],
        fetch: Callable[[], Fetched],
        period: float,
        *,
        leader_period: float | Callable[[], float] | None = None,
        outages: Outages | None = None,
        service: str = "",
    ) -> None:
        """Poll `fetch` into `target` every `period` seconds (0: never); the whitelist
        only while this process leads. What the leader needs before it opens (Ironic's
        nodes under inspection) gives `leader_period` (or a callable saying it, looked at
        every second) and is polled at each election, even with both periods 0."""
        if period <= 0 and leader_period is None:
            return
        every: float | Callable[[], float] = period
        if leader_period is not None:
            leading = leader_period if callable(leader_period) else lambda: leader_period
            every = lambda: leading() if self.is_leader() else period  # noqa: E731
        leader_only = target is self.whitelist
        poller = Poller(
            target,
            fetch,
            every,
            on_change=self.wake,
            lifecycle=self.lifecycle,
            outages=outages,
            service=service,
            active=self.is_leader if leader_only else lambda: True,
        )
        self._pollers.append(poller)
        if leader_only or leader_period is not None:
            self._whitelist_poller = poller

    def fill_from(self, source: ListSource) -> None:
        """`source` hears Ironic's notifications and rules on MACs in neither list."""
        self.source = source

    def listen(self, channel: channels.Channel) -> None:
        """Take the lists' changes and status requests from `channel` (start() starts it)."""
        self.channel = channel
        channel.subscribe(Feed(self))

    def stamp_every(self, stamp: Callable[[], object], period: float) -> None:
        """Call `stamp` every `period` seconds on a thread of its own, leader or not
        (firewall.demand: this host applies the workers' announcements)."""
        self._stamp, self._stamp_period = demand.Aside(stamp), period

    def start(self) -> None:
        if self.channel is not None:
            self.channel.start()
        for poller in self._pollers:
            poller.start()
        self._thread = threading.Thread(target=self._run, name="firewall", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Close for good (retrying up to CLOSE_BOUND) and stop the threads."""
        self._stopped.set()
        with self._guard:
            self._leadership = None
        self._close_firmly("stopping")
        self._wake.set()
        if self._thread is not None:
            self._thread.join(CLOSE_BOUND)
        for poller in self._pollers:
            poller.stop()
        if self._stamp is not None:
            self._stamp.join(self.retry_interval)
        if self.channel is not None:
            self.channel.stop()

    # -- the desired state ----------------------------------------------------------------

    def is_leader(self) -> bool:
        return self._leadership is not None

    def desired(self) -> RuleSet:
        """Open with both lists while this process leads and may act; else closed, with
        the blacklist kept current (the whitelist is the leader's business)."""
        leadership = self._leadership
        blacklist = self.blacklist.macs()
        if (
            leadership is None
            or not leadership.valid()
            or self.lifecycle.shutdown.is_set()
            or self._stopped.is_set()
        ):
            return RuleSet(frozenset(), blacklist, open=False, deny_unknown=self.deny_unknown)
        return RuleSet(
            self.whitelist.macs(),
            blacklist,
            open=True,
            deny_unknown=self.deny_unknown or not self.source.allows_unknown(),
            open_until=takeover.open_until(self.driver, leadership),
        )

    def wake(self) -> None:
        """Something changed: apply soon (in the firewall thread)."""
        self._wake.set()

    def sync(self, *, verify: bool = False) -> bool:
        """Apply the desired rule set if it changed (or to `verify` it). True when the
        firewall is as desired; on a failure it is closed and False returned."""
        with self._guard:
            rules = self.desired()
            if rules == self._applied and not verify:
                return True
            began = time.perf_counter()
            try:
                self.driver.apply(rules)
            except Exception as exc:
                self._applied = None
                self._error = getattr(exc, "message", None) or repr(exc)
                LOG.error("Applying the PXE firewall failed: %s; closing it", self._error)
                self._close()
                return False
            was_open = self._applied is not None and self._applied.open
            self._applied, self._applied_at, self._error = rules, time.time(), None
            self._apply_seconds = time.perf_counter() - began
            self.observer.applied()
        if rules.open != was_open:
            LOG.info("PXE service %s", "opened" if rules.open else "closed")
        return True

    def compact(self) -> None:
        """Let the driver fold its whitelist overrides (a batch that deletes, so slower
        than a change: done with the periodic check, off the hot path). If that fails
        the state is unknown: rewritten whole at once, or closed."""
        with self._guard:
            try:
                if self.driver.compact():
                    LOG.debug("PXE firewall compacted (%s driver)", self.driver.name)
            except FirewallError as exc:
                LOG.warning("Compacting the PXE firewall failed: %s; rewriting it", exc.message)
                self.sync(verify=True)

    def _close(self) -> bool:
        """Apply the fully closed rule set; False (logged loudly) when even that fails."""
        with self._guard:
            try:
                self.driver.close()
            except Exception as exc:
                self._error = getattr(exc, "message", None) or repr(exc)
                self._cannot_close = True
                LOG.critical("CANNOT CLOSE THE PXE FIREWALL: %s; retrying", self._error)
                return False
            self._applied, self._cannot_close = None, False
            return True

    def _close_firmly(self, why: str) -> None:
        """Close (the lists kept, unless stopping), retrying every retry_interval; past
        CLOSE_BOUND stop the process."""
        deadline = time.monotonic() + CLOSE_BOUND
        while True:
            if not self._stopped.is_set() and self.sync():
                return
            if self._close():
                return
            if time.monotonic() > deadline:
                self.lifecycle.stop(f"cannot close the PXE firewall ({why})", exit_status=1)
                return
            self._pause(self.retry_interval)

    # -- threads ----------------------------------------------------------------------------

    def lead(self, leadership: Leadership) -> None:
        """Election body: wait (takeover), build the whitelist, open, keep the rules and
        their expiry current while the leadership lasts; close before returning."""
        waited = takeover.wait(leadership, self.takeover_delay, clock=self._clock)
        if waited and self._whitelist_poller is not None:
            self._whitelist_poller.poll()
        if not waited or not leadership.valid():
            # Ended while it waited, or frozen or slow since the election: the lease may
            # be someone else's now.
            LOG.info("Firewall term %d ended before the PXE service opened", leadership.term)
            return
        with self._guard:
            self._leadership = leadership
        LOG.info("Firewall leader (term %d): opening the PXE service", leadership.term)
        try:
            failures = 0
            while True:
                failures = 0 if self.sync() else failures + 1
                if failures >= MAX_FAILURES:
                    raise FirewallError(f"cannot open the PXE firewall: {self._error}")
                if leadership.wait(self.refresh):
                    break
        finally:
            with self._guard:
                if self._leadership is leadership:
                    self._leadership = None
            self._close_firmly(f"term {leadership.term} over")
            LOG.info("Firewall leadership (term %d) over: PXE service closed", leadership.term)

    def _run(self) -> None:
        verified = stamped = time.monotonic()
        stopping = False
        while not self._stopped.is_set():
            self._wake.wait(self.refresh)
            self._wake.clear()
            if self._stopped.is_set():
                return
            if not stopping and self.lifecycle.shutdown.is_set():
                self.notifier.stopping()
                stopping = True
            if self._stamp is not None and time.monotonic() - stamped >= self._stamp_period:
                self._stamp()
                stamped = time.monotonic()
            verify = time.monotonic() - verified >= VERIFY_PERIOD
            if self._pass(verify) or not self._cannot_close:
                # As desired, or closed: progress. A pass that hangs (a command, a frozen
                # process) or cannot close says nothing: systemd kills after WatchdogSec.
                self.notifier.alive()
            if verify:
                verified = time.monotonic()

    def _pass(self, verify: bool) -> bool:
        """One pass of the firewall loop: apply what changed (and compact, when verifying);
        on any error close. True when the firewall is as desired."""
        try:
            if self.sync(verify=verify):
                if verify:
                    self.compact()
                return True
        except InspectorError as exc:  # our own error: one line (a stack with debug on)
            LOG.error(
                "The PXE firewall thread failed: %s; closing",
                exc.message,
                exc_info=LOG.isEnabledFor(logging.DEBUG),
            )
            self._close()
        except Exception:
            LOG.exception("The PXE firewall thread failed; closing")
            self._close()
        return False
