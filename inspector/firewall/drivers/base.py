"""The PXE filter driver interface: render a RuleSet as one batch, apply it in one go, close.

Owns the order of an apply (patch a state known to be there, else replace it whole), the
whitelist overrides that spare the hot path a deletion (and their compaction), and the
lock; the drivers own their batch language. Must not decide what is open: the manager does.
"""

import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Self

from oslo_config import cfg

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.commands import Runner
from inspector.firewall.ruleset import CLOSED, Delta, RuleSet, delta

LOG = logging.getLogger(__name__)

#: A delta touching at most this many MACs is applied as a patch (add and delete the
#: entries) instead of replacing the whole state; a bigger one costs about as much.
PATCH_LIMIT = 512
#: Whitelist overrides the kernel may hold before an apply compacts them at once (each is
#: one rule a DHCP packet walks past); compact() usually comes first.
MAX_OVERRIDES = 64
#: Names we put into batches (chain, table, set prefix): no quoting needed anywhere.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
#: Interface names as Linux allows them; a trailing + is iptables' wildcard.
_INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]{1,15}\+?")


def checked_name(value: str, option: str, max_length: int) -> str:
    if not _NAME.fullmatch(value or "") or len(value) > max_length:
        raise ConfigError(
            f"{option}: {value!r} is not usable as a firewall name; it must start with a "
            f"letter, hold only letters, digits, '_', '.', '-' and be at most "
            f"{max_length} characters"
        )
    return value


def checked_interface(value: str, option: str = "[iptables] dnsmasq_interface") -> str:
    if not _INTERFACE.fullmatch(value or ""):
        raise ConfigError(f"{option}: {value!r} is not an interface name")
    return value


@dataclasses.dataclass(frozen=True)
class WhitelistSteps:
    """A whitelist change made of additions only (for the drivers with overrides).

    The kernel holds a base whitelist (a set or chain, as of the last full write or
    compaction, plus every MAC added since) and, looked at before it, overrides: one rule
    per change, newest first, that accepts a MAC or sends it past the whitelist (to the
    blacklist and the final verdict). Deleting anything costs a kernel commit 10-25 ms;
    adding costs 3-6 ms, so the hot path only adds.
    """

    #: New MACs (not in the base): added to the base whitelist itself.
    added: tuple[str, ...] = ()
    #: MACs in the base whose newest override revoked them: an accepting override.
    readmitted: tuple[str, ...] = ()
    #: MACs leaving the whitelist: a revoking override.
    revoked: tuple[str, ...] = ()

    @classmethod
    def of(cls, base: frozenset[str], change: Delta) -> "WhitelistSteps":
        # Every whitelisted MAC is in the base (an override only ever re-accepts a base
        # member), so a removal always has something to revoke.
        return cls(
            added=tuple(sorted(change.whitelist_added - base)),
            readmitted=tuple(sorted(change.whitelist_added & base)),
            revoked=tuple(sorted(change.whitelist_removed)),
        )

    @property
    def overrides(self) -> int:
        return len(self.readmitted) + len(self.revoked)


class Driver:
    """One way of filtering the PXE port. Subclasses implement render and the _hooks."""

    #: The [pxe_filter] driver name.
    name: str = ""
    #: Seconds to which the kernel's own closing at RuleSet.open_until is exact; None:
    #: the driver cannot close by itself (open_until is ignored: closing needs us).
    expiry_resolution: float | None = None
    #: Whether a whitelist removal is an override (WhitelistSteps) that compact() folds.
    uses_overrides: bool = False

    def __init__(self, runner: Runner | None = None) -> None:
        self.runner = runner or Runner()
        #: Wall clock (epoch seconds) turning open_until into what the kernel takes.
        self.clock: Callable[[], float] = time.time
        # apply/close/remove may come from the sync thread and a SIGTERM handler at once.
        self._lock = threading.RLock()
        # What the kernel (or hostsdir) holds as far as we know; None: unknown, so the
        # next apply replaces everything.
        self._applied: RuleSet | None = None
        #: The base whitelist in the kernel (drivers with overrides): a superset of the
        #: applied whitelist until compacted.
        self.base_whitelist: frozenset[str] = frozenset()
        #: Override rules in the kernel since the last full write or compaction.
        self.overrides = 0

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, runner: Runner) -> Self:
        raise NotImplementedError

    def check(self) -> None:
        """Raise ConfigError with a clear message if the driver cannot work here."""

    def render(self, rules: RuleSet) -> str:
        """The whole desired state as the text of one batch (pure)."""
        raise NotImplementedError

    def apply(self, rules: RuleSet) -> None:
        """Make `rules` the state, in one atomic batch. Idempotent."""
        with self._lock:
            previous, self._applied = self._applied, None
            if previous is not None:
                change = delta(previous, rules)
                if change.size <= PATCH_LIMIT:
                    try:
                        self._patch(previous, rules, change)
                    except FirewallError as exc:
                        LOG.warning("patching the firewall failed (%s); replacing it whole", exc)
                    else:
                        self._applied = rules
                        if self.overrides > MAX_OVERRIDES:
                            self._compact_quietly()
                        return
            self._replace(rules)
            self._written(rules)

    def is_compact(self) -> bool:
        """Whether the kernel holds the applied whitelist without overrides or leftovers."""
        applied = self._applied
        return (
            not self.uses_overrides
            or applied is None
            or (not self.overrides and self.base_whitelist == applied.whitelist)
        )

    def compact(self) -> bool:
        """Fold the overrides into the base whitelist and drop the revoked MACs from it:
        one atomic batch, which deletes, so off the hot path (the manager calls it with
        its periodic check). True when there was something to do. On a FirewallError
        the state is unknown and the next apply replaces it whole."""
        with self._lock:
            if self.is_compact():
                return False
            rules, self._applied = self._applied, None
            assert rules is not None
            self._compact(rules)
            self._written(rules)
            return True

    def _compact_quietly(self) -> None:
        try:
            self.compact()
        except FirewallError as exc:
            LOG.warning("compacting the firewall failed (%s); the next apply rewrites it", exc)

    def _written(self, rules: RuleSet) -> None:
        """The kernel now holds `rules` exactly as render() writes them."""
        self._applied, self.base_whitelist, self.overrides = rules, rules.whitelist, 0

    def close(self) -> None:
        """Drop everything to the PXE port. Works without a previous apply."""
        with self._lock:
            self._applied = None
            closed = self._close()
            if closed is not None:
                self._written(closed)

    def remove(self) -> None:
        """Remove everything the driver created (tests, uninstall); not for errors."""
        with self._lock:
            self._applied = None
            self._remove()

    # Hooks for the drivers.

    def _replace(self, rules: RuleSet) -> None:
        """Apply the whole state; the kernel must end up exactly as render(rules) says."""
        raise NotImplementedError

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        """Apply `change` onto a state known to be `previous` (an empty change too: then
        check, cheaply, that the state is still hooked in). Raise FirewallError when in
        doubt: the whole state is then replaced. By default: replace. A driver with
        overrides keeps base_whitelist and overrides true after a successful batch."""
        self._replace(rules)

    def _compact(self, rules: RuleSet) -> None:
        """Make the kernel hold `rules` (applied, overrides and all) as render() would."""
        self._replace(rules)

    def _close(self) -> RuleSet | None:
        """Close; return the state now known to be applied (None when unknown)."""
        self._replace(CLOSED)
        return CLOSED

    def _remove(self) -> None:
        raise NotImplementedError
