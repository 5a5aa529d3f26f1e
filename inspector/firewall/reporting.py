"""What a firewall manager tells about itself: its Status, and the answer to a status
request heard on the channel. A mixin of FirewallManager (its state stays there)."""

import dataclasses
import threading

from inspector.broker import channels
from inspector.coordination.election import Leadership
from inspector.firewall.drivers import Driver
from inspector.firewall.lists import MacList
from inspector.firewall.observer import Observer
from inspector.firewall.ruleset import RuleSet
from inspector.firewall.status import Status
from inspector.lifecycle import Lifecycle


class Reporting:
    """FirewallManager's status; reads the manager's state under its guard."""

    # The manager's state this reads (FirewallManager.__init__ sets each).
    host: str
    member: str
    driver: Driver
    lifecycle: Lifecycle
    observer: Observer
    whitelist: MacList
    blacklist: MacList
    channel: channels.Channel | None
    _guard: threading.RLock
    _leadership: Leadership | None
    _applied: RuleSet | None
    _applied_at: float | None
    _apply_seconds: float | None
    _error: str | None
    _stopped: threading.Event

    def status(self) -> Status:
        with self._guard:
            applied, leadership = self._applied, self._leadership
            is_open = applied is not None and applied.open
            return Status(
                host=self.host,
                member=self.member,
                driver=self.driver.name,
                open=is_open,
                leader=leadership is not None,
                term=leadership.term if leadership is not None else None,
                open_until=applied.open_until if applied is not None else None,
                whitelist=len(applied.whitelist) if applied is not None else 0,
                blacklist=len(applied.effective_blacklist) if applied is not None else 0,
                whitelist_synced_at=self.whitelist.synced_at,
                blacklist_synced_at=self.blacklist.synced_at,
                heard_at=max(
                    (t for t in (self.whitelist.heard_at, self.blacklist.heard_at) if t),
                    default=None,
                ),
                applied_at=self._applied_at,
                error=self._error,
                apply_seconds=self._apply_seconds,
                role=self._role(is_open),
                lag=self.observer.last_lag,
            )

    def _role(self, is_open: bool) -> str:
        if is_open and self._leadership is not None:
            return "leader"
        failing = self._error or self.lifecycle.shutdown.is_set() or self._stopped.is_set()
        return "closed" if failing or self._leadership is not None else "follower"

    def answer(self, request_id: str) -> None:
        """A status request heard on the channel: publish this process's status."""
        if self.channel is not None:
            payload = {"request_id": request_id, **dataclasses.asdict(self.status())}
            self.channel.publish(channels.STATUS, payload)
