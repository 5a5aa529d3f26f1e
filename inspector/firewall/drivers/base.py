"""The PXE filter driver interface: render a RuleSet as one batch, apply it in one go, close.

Owns the order of an apply (patch a state known to be there, else replace it whole) and
the lock; the drivers own their batch language. Must not decide what is open: the
manager does.
"""

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Self

from oslo_config import cfg

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.commands import Runner
from inspector.firewall.rules import CLOSED, Delta, RuleSet, delta

LOG = logging.getLogger(__name__)

#: A delta touching at most this many MACs is applied as a patch (add and delete the
#: entries) instead of replacing the whole state; a bigger one costs about as much.
PATCH_LIMIT = 512
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


class Driver:
    """One way of filtering the PXE port. Subclasses implement render and the _hooks."""

    #: The [pxe_filter] driver name.
    name: str = ""
    #: Seconds to which the kernel's own closing at RuleSet.open_until is exact; None:
    #: the driver cannot close by itself (open_until is ignored: closing needs us).
    expiry_resolution: float | None = None

    def __init__(self, runner: Runner | None = None) -> None:
        self.runner = runner or Runner()
        #: Wall clock (epoch seconds) turning open_until into what the kernel takes.
        self.clock: Callable[[], float] = time.time
        # apply/close/remove may come from the sync thread and a SIGTERM handler at once.
        self._lock = threading.RLock()
        # What the kernel (or hostsdir) holds as far as we know; None: unknown, so the
        # next apply replaces everything.
        self._applied: RuleSet | None = None

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
                        return
            self._replace(rules)
            self._applied = rules

    def close(self) -> None:
        """Drop everything to the PXE port. Works without a previous apply."""
        with self._lock:
            self._applied = None
            self._applied = self._close()

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
        doubt: the whole state is then replaced. By default: replace."""
        self._replace(rules)

    def _close(self) -> RuleSet | None:
        """Close; return the state now known to be applied (None when unknown)."""
        self._replace(CLOSED)
        return CLOSED

    def _remove(self) -> None:
        raise NotImplementedError
