"""How often the firewall leader reconciles Ironic's nodes under inspection: fast while
no Ironic notification was heard lately (none configured, Ironic sends none, the bus is
down), slow while they flow. Owns that choice; must not poll (the Poller does)."""

import collections
import time
from collections.abc import Callable

from oslo_config import cfg

#: Reconciles whose time stretches the fast period (the shortest of them counts).
SPENT_KEPT = 5


class Cadence:
    """The leader's period between two reconciles, as a Poller's `period()`.

    `slow`: [firewall] whitelist_sync_period, the period while notifications flow (0:
    none, notifications alone). `fast`: [firewall] inspection_poll_interval, the period
    while none was heard within `quiet` seconds (0: never fast), stretched so that the
    last reconcile's time (`spent`) is at most `share` of it ([firewall]
    inspection_poll_max_share; 0: never stretched): a slow or busy Ironic, or many
    nodes under inspection at once, is polled less often. `heard()` records a
    notification."""

    def __init__(
        self,
        slow: float,
        fast: float,
        quiet: float,
        *,
        listening: bool,
        share: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.slow = slow
        self.fast = fast
        self.quiet = quiet
        self.share = share
        # Seconds the last reconciles took (Ironic's answers, as the leader saw them).
        self._spent: collections.deque[float] = collections.deque(maxlen=SPENT_KEPT)
        #: Whether Ironic's notifications are listened to at all ([firewall] ironic_topic).
        self.listening = listening
        self.clock = clock
        self._heard_at: float | None = None

    def heard(self) -> None:
        """An Ironic notification arrived."""
        self._heard_at = self.clock()

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, *, listening: bool) -> "Cadence":
        """From [firewall]; `listening`: whether Ironic's notifications are listened to."""
        group = conf.firewall
        return cls(
            group.whitelist_sync_period,
            group.inspection_poll_interval,
            group.notification_quiet_period,
            listening=listening,
            share=group.inspection_poll_max_share,
        )

    def spent(self, seconds: float) -> None:
        """A reconcile took `seconds`."""
        self._spent.append(seconds)

    @property
    def last_spent(self) -> float:
        """The shortest of the last SPENT_KEPT reconciles' times: a busy Ironic is slow
        every time, a CPU-starved moment of this host once."""
        return min(self._spent, default=0.0)

    def is_notified(self) -> bool:
        """Whether Ironic's notifications flow: one heard within `quiet` seconds."""
        return (
            self.listening
            and self._heard_at is not None
            and self.clock() - self._heard_at < self.quiet
        )

    def __call__(self) -> float:
        if self.fast <= 0 or self.is_notified():
            return self.slow
        fast = max(self.fast, self.last_spent / self.share) if self.share > 0 else self.fast
        return min(fast, self.slow) if self.slow > 0 else fast
