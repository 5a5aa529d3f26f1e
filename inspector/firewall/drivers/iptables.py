"""iptables driver: the main chain and two list chains, each apply `iptables-restore --noflush`.

Needs: iptables-restore and iptables (ip6tables-* for [iptables] ip_version 6) of the
[iptables] backend (auto: the host's; nft or legacy: iptables-nft-*, iptables-legacy-*;
see xtables.py), with the `mac` match. Guarantees: what a packet meets changes in one
restore transaction, so it meets either the old rules or the new ones; the INPUT jump
(`-i <dnsmasq_interface> -p udp --dport 67|547`) is inserted once, checked on every apply
and put back if it went missing. The whitelist chain is looked at before the blacklist
chain, so whitelisting a MAC never rewrites the (big) blacklist; a MAC leaves the
whitelist by a `-j RETURN` rule inserted at the head of the whitelist chain, never by a
deletion on the hot path (base.WhitelistSteps). On nf_tables a whole replacement onto a
live rule set deletes nothing either: it fills the other slot of list chains (created
empty first; two restores at once for a big blacklist), then one transaction inserts
the new verdict, which ends in ACCEPT or DROP, at the head of the main chain. compact()
removes what that leaves later. Nothing outside our chains and that one jump is touched.
[iptables] ethoib_interfaces is not supported (ignored with a warning).
RuleSet.open_until becomes `-m time --datestop` (UTC, whole seconds, rounded down) on
the pass rules: the kernel closes the port by itself then.
"""

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Self

from oslo_config import cfg

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.commands import Runner
from inspector.firewall.drivers.base import (
    Driver,
    WhitelistSteps,
    checked_interface,
    checked_name,
)
from inspector.firewall.drivers.iptables_rules import IptablesRules, filter_table
from inspector.firewall.drivers.xtables import Backend
from inspector.firewall.ruleset import Delta, RuleSet

LOG = logging.getLogger(__name__)

#: DHCP server port per IP version.
DHCP_PORT = {"4": 67, "6": 547}
#: Longest prefix: iptables chain names hold 28 characters (`<prefix>-wl2`), ipset's
#: temporary sets (prefix + "-wl-new") 31.
MAX_PREFIX = 24


class IptablesDriver(IptablesRules, Driver):
    """Chains `<prefix>` (jumped to from INPUT) and one slot of `<prefix>-wl`, `<prefix>-bl`."""

    name = "iptables"
    expiry_resolution = 1.0
    uses_overrides = True

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        interface: str = "br-ctlplane",
        chain: str = "ironic-inspector",
        ip_version: str = "4",
        backend: str = "auto",
    ) -> None:
        super().__init__(runner)
        if ip_version not in DHCP_PORT:
            raise ConfigError(f"[iptables] ip_version: {ip_version!r} is not 4 or 6")
        self.interface = checked_interface(interface)
        self.chain = checked_name(chain, "[iptables] firewall_chain", MAX_PREFIX)
        self.ip_version = ip_version
        self.port = DHCP_PORT[ip_version]
        self.backend = Backend.of(backend, ip_version)
        self.iptables, self.restore, self.save = (
            self.backend.iptables,
            self.backend.restore,
            self.backend.save,
        )
        #: The slot whose list chains the main chain's verdict jumps to; None: unknown.
        self.slot: int | None = None
        #: Whether the other slot's chains, and verdict rules under the live ones in the
        #: main chain, may be left over from a replacement: compact() removes them.
        self.leftovers = False
        #: Whether the backend is nf_tables, where deleting costs a wait: replacements
        #: fill the other slot. backend = auto: assumed until check() reads the version.
        self.nf_tables = self.backend.name != "legacy"

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, runner: Runner) -> Self:
        if conf.iptables.ethoib_interfaces:
            LOG.warning(
                "[iptables] ethoib_interfaces is not supported by the %s driver: "
                "Ethernet-over-InfiniBand clients are filtered by their own MAC only",
                cls.name,
            )
        return cls(
            runner,
            interface=conf.iptables.dnsmasq_interface,
            chain=conf.iptables.firewall_chain,
            ip_version=conf.iptables.ip_version,
            backend=conf.iptables.backend,
        )

    # Applying.

    def check(self) -> None:
        probe = f"{self.chain}-probe"
        batch = filter_table(
            [
                f":{probe} - [0:0]",
                f"-A {probe} -m mac --mac-source 00:00:00:00:00:00 -j DROP",
                f"-A {probe} -m time --datestop 2038-01-01T00:00:00 -j DROP",
            ]
        )
        try:
            version = self.runner.run([self.iptables, "--version"]).stdout
            self.runner.run([self.restore, "-w", "--noflush", "--test"], stdin=batch)
        except FirewallError as exc:
            raise ConfigError(
                f"{self.name} driver unavailable: {exc.message}; install iptables (of "
                f"[iptables] backend = {self.backend.name}) or use the nftables driver"
            ) from exc
        if self.backend.name == "auto":  # e.g. "iptables v1.8.9 (nf_tables)"
            self.nf_tables = "(legacy)" not in version
        self.backend.check_alone(self.runner, self._chains())

    def _restore(self, lines: list[str]) -> None:
        try:
            self.runner.run([self.restore, "-w", "--noflush"], stdin=filter_table(lines))
        except FirewallError:
            self.slot = None  # which slot the kernel holds is no longer known
            raise

    def _has_jump(self) -> bool:
        result = self.runner.run([self.iptables, "-w", "-C", *self.jump.split()], check=False)
        return result.returncode == 0

    def _replace(self, rules: RuleSet) -> None:
        if not self.nf_tables:  # no deletion wait there: never the other slot
            self._rewrite(rules, jump=not self._has_jump(), other=False)
            return
        # The jump check and the slot's creation are independent: both at once.
        with ThreadPoolExecutor(max_workers=2) as pool:
            hooked = pool.submit(self._has_jump)
            spare = self._claim()
            jump = not hooked.result()
            if spare is not None and not jump:
                *fill, switch = self._switch(rules, spare)
                for done in [pool.submit(self._restore, lines) for lines in fill]:
                    done.result()  # raises the first failure (the pool waits for all)
                self._restore(switch)
                self.slot, self.leftovers = spare, True
                return
        # No main chain to insert into (its jump is gone), or no free slot (a replacement
        # not yet compacted, or one that failed half-way): the other slot's chains exist.
        self._rewrite(rules, jump=jump, other=True)

    def _rewrite(self, rules: RuleSet, *, jump: bool, other: bool) -> None:
        """The live slot written whole, which deletes what it replaces; `other`: the
        other slot's chains may exist (compact() removes them)."""
        self.slot = self.slot or 0
        self._restore(self._body(rules, jump=jump))
        self.leftovers = self.leftovers or other

    def _claim(self) -> int | None:
        """A slot whose list chains a batch just created (`-N` fails if they exist), so
        empty and used by nothing: the one not live when the state is known, else the
        first that can be; None if their chains exist (left over, or live)."""
        for slot in [1 - self.slot] if self.slot is not None else [0, 1]:
            batch = filter_table([f"-N {chain}" for chain in self._lists(slot)])
            argv = [self.restore, "-w", "--noflush"]
            if self.runner.run(argv, stdin=batch, check=False).returncode == 0:
                return slot
        return None

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        bl = self.blacklist_chain
        lines = self._entries("-D", bl, change.blacklist_removed, "DROP")
        lines += self._entries("-A", bl, change.blacklist_added, "DROP")
        rewrite = change.verdict_changed or change.expiry_changed
        # A batch that deletes anyway (a rule out, the main chain rewritten) pays the
        # commit's wait already: it compacts too.
        compacting = rewrite or bool(change.blacklist_removed)
        steps = WhitelistSteps.of(self.base_whitelist, change)
        if compacting:
            whitelist = self._compaction(rules)
            if rewrite or self.leftovers:
                lines += self._tidy(rules)
        else:
            wl = self.whitelist_chain
            # -I at position 1: the newest word on a MAC comes first in the chain.
            whitelist = self._entries("-I", f"{wl} 1", steps.revoked, "RETURN")
            whitelist += self._entries("-I", f"{wl} 1", steps.readmitted, "ACCEPT")
            whitelist += self._entries("-A", wl, steps.added, "ACCEPT")
        lines = whitelist + lines
        if not self._has_jump():
            lines.insert(0, f"-I {self.jump}")
        if lines:
            self._restore(lines)
        if compacting:
            self.base_whitelist, self.overrides = rules.whitelist, 0
            self.leftovers = False
        else:
            self.base_whitelist |= frozenset(steps.added)
            self.overrides += steps.overrides

    def _close(self) -> RuleSet | None:
        """A DROP inserted at the head of the main chain, in front of whatever it holds
        (no slot used, nothing deleted); the lists stay as they were, so the next apply
        writes the whole state."""
        if self._has_jump():
            self._restore([f"-I {self.chain} 1 -j DROP"])
        else:  # the main chain may be missing too
            self._restore([f":{self.chain} - [0:0]", f"-A {self.chain} -j DROP", f"-I {self.jump}"])
        return None

    def is_compact(self) -> bool:
        return super().is_compact() and (self._applied is None or not self.leftovers)

    def _compact(self, rules: RuleSet) -> None:
        lines = self._compaction(rules)
        if self.leftovers:
            lines += self._tidy(rules)
        if lines:
            self._restore(lines)
        self.leftovers = False

    def _remove(self) -> None:
        saved = self.runner.run([self.save, "-t", "filter"]).stdout
        ours = [line.split() for line in saved.splitlines()]
        lines = [
            "-D " + " ".join(words[1:])
            for words in ours
            if words[:2] == ["-A", "INPUT"] and words[-2:] == ["-j", self.chain]
        ]
        lines += [f":{chain} - [0:0]" for chain in self._chains()]
        lines += [f"-X {chain}" for chain in self._chains()]
        self._restore(lines)
        self.slot, self.leftovers = None, False


__all__ = ["DHCP_PORT", "IptablesDriver"]
