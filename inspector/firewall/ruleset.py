"""The PXE firewall's desired state: a RuleSet of MACs and two flags, and the delta between two.

Pure values only; the drivers turn them into iptables, nftables, ipset or dnsmasq state.
"""

import dataclasses
import math
from collections.abc import Iterable

from inspector.macs import is_normal_mac, normalise_mac


@dataclasses.dataclass(frozen=True)
class RuleSet:
    """Everything a driver needs to render the PXE port's filter.

    Packets to the DHCP port on the PXE interface: not `open` -> dropped; open -> a
    whitelisted source MAC is accepted, a blacklisted one dropped, any other one accepted
    unless `deny_unknown`. A MAC in both lists counts as whitelisted. With `open_until`,
    the kernel itself closes the port at that moment unless a later apply moves it.
    """

    #: MACs of nodes under introspection (normalised).
    whitelist: frozenset[str]
    #: MACs Ironic knows that are not under introspection (normalised).
    blacklist: frozenset[str]
    #: True only on the firewall leader: its PXE service may answer.
    open: bool
    #: [pxe_filter] deny_unknown_macs: MACs in neither list are dropped too.
    deny_unknown: bool
    #: Epoch seconds after which the port is closed without us (the leader's trust in
    #: its lease runs out: a killed leader cannot close its own rules); None: open until
    #: the next apply. Always None when not open.
    open_until: float | None = None

    def __post_init__(self) -> None:
        if not self.open and self.open_until is not None:
            object.__setattr__(self, "open_until", None)
        # Checked here, not in each renderer: a batch must never carry a newline or a
        # quote that came in as a "MAC".
        for name in ("whitelist", "blacklist"):
            macs = getattr(self, name)
            if not isinstance(macs, frozenset):
                object.__setattr__(self, name, macs := frozenset(macs))
            bad = sorted(repr(mac) for mac in macs if not is_normal_mac(mac))
            if bad:
                raise ValueError(
                    f"{name} holds MACs that are not normalised (use RuleSet.of or "
                    f"normalise_mac): {', '.join(bad[:5])}"
                )

    @classmethod
    def of(
        cls,
        whitelist: Iterable[str] = (),
        blacklist: Iterable[str] = (),
        *,
        open: bool,
        deny_unknown: bool,
        open_until: float | None = None,
    ) -> "RuleSet":
        """A RuleSet from MACs in any spelling normalise_mac accepts."""
        return cls(
            frozenset(normalise_mac(mac) for mac in whitelist),
            frozenset(normalise_mac(mac) for mac in blacklist),
            open=open,
            deny_unknown=deny_unknown,
            open_until=open_until,
        )

    @property
    def effective_blacklist(self) -> frozenset[str]:
        """The blacklist without the whitelisted MACs (for one-record-per-MAC drivers)."""
        return self.blacklist - self.whitelist


#: Fully closed: what close() applies and what a driver starts from.
CLOSED = RuleSet(frozenset(), frozenset(), open=False, deny_unknown=True)


@dataclasses.dataclass(frozen=True)
class Delta:
    """What changed between two RuleSets, list by list (as given, nothing subtracted)."""

    whitelist_added: frozenset[str]
    whitelist_removed: frozenset[str]
    blacklist_added: frozenset[str]
    blacklist_removed: frozenset[str]
    #: open or deny_unknown changed, or open_until came or went: the final verdict of
    #: the PXE chain is rewritten.
    verdict_changed: bool
    #: Only the moment open_until changed (the leader's refresh).
    expiry_changed: bool = False

    @property
    def size(self) -> int:
        """How many MAC entries the delta touches."""
        return (
            len(self.whitelist_added)
            + len(self.whitelist_removed)
            + len(self.blacklist_added)
            + len(self.blacklist_removed)
        )

    @property
    def is_empty(self) -> bool:
        return self.size == 0 and not self.verdict_changed and not self.expiry_changed


def delta(old: RuleSet, new: RuleSet) -> Delta:
    """The entries to add and remove to turn `old` into `new`.

    A node going under introspection only adds its MAC to the whitelist: the chain
    renderers keep it in the blacklist too (the whitelist is looked at first), so the
    big list is not touched on the hot path.
    """
    return Delta(
        whitelist_added=new.whitelist - old.whitelist,
        whitelist_removed=old.whitelist - new.whitelist,
        blacklist_added=new.blacklist - old.blacklist,
        blacklist_removed=old.blacklist - new.blacklist,
        verdict_changed=_verdict(old) != _verdict(new),
        expiry_changed=old.open_until != new.open_until,
    )


def _verdict(rules: RuleSet) -> tuple[bool, bool, bool]:
    return rules.open, rules.deny_unknown, rules.open_until is not None


def seconds_left(open_until: float, now: float) -> float:
    """Whole milliseconds from now until open_until, rounded down, never negative."""
    return max(0.0, math.floor((open_until - now) * 1000) / 1000)
