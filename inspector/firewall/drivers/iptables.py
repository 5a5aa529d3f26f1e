"""iptables driver: three custom chains written by one `iptables-restore --noflush` transaction.

Needs: iptables-restore and iptables (ip6tables-* for [iptables] ip_version 6) of the
[iptables] backend (auto: the host's; nft or legacy: iptables-nft-*, iptables-legacy-*;
see xtables.py), with the `mac` match. Guarantees: every apply is one restore
transaction, so a packet meets either the old chains or the new ones; the INPUT jump
(`-i <dnsmasq_interface> -p udp --dport 67|547`) is inserted once, checked on every apply
and put back if it went missing. The whitelist chain is looked at before the blacklist
chain, so whitelisting a MAC never rewrites the (big) blacklist; a MAC leaves the
whitelist by a `-j RETURN` rule inserted at the head of the whitelist chain (back to the
blacklist), never by a deletion on the hot path, and compact() rewrites the whitelist
chain later (base.WhitelistSteps). Nothing outside our chains and that one jump is
touched. [iptables] ethoib_interfaces is not supported (ignored with a warning).
RuleSet.open_until becomes `-m time --datestop` (UTC, whole seconds, rounded down) on
the pass rules: the kernel closes the port by itself then.
"""

import logging
import math
from datetime import UTC, datetime
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
from inspector.firewall.drivers.xtables import Backend
from inspector.firewall.rules import Delta, RuleSet

LOG = logging.getLogger(__name__)

#: DHCP server port per IP version.
DHCP_PORT = {"4": 67, "6": 547}
#: Longest prefix: iptables chain names hold 28 characters, ipset's temporary sets
#: (prefix + "-wl-new") 31.
MAX_PREFIX = 24


class IptablesDriver(Driver):
    """Chains `<prefix>` (jumped to from INPUT), `<prefix>-wl` and `<prefix>-bl`."""

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
        self.whitelist_chain = f"{chain}-wl"
        self.blacklist_chain = f"{chain}-bl"
        self.ip_version = ip_version
        self.port = DHCP_PORT[ip_version]
        self.backend = Backend.of(backend, ip_version)
        self.iptables, self.restore, self.save = (
            self.backend.iptables,
            self.backend.restore,
            self.backend.save,
        )

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

    # What the chains hold.

    @property
    def jump(self) -> str:
        """The INPUT rule that sends DHCP packets on the PXE interface to our chain."""
        return f"INPUT -i {self.interface} -p udp --dport {self.port} -j {self.chain}"

    def _chains(self) -> list[str]:
        return [self.chain, self.whitelist_chain, self.blacklist_chain]

    def _verdict(self, rules: RuleSet) -> list[str]:
        """The main chain: jumps to the lists and the final verdict."""
        if not rules.open:
            return [f"-A {self.chain} -j DROP"]
        return self._passes(
            rules,
            [f"-j {self.whitelist_chain}", f"-j {self.blacklist_chain}"],
        )

    def _passes(self, rules: RuleSet, rules_text: list[str]) -> list[str]:
        """The main chain of an open rule set: `rules_text`, then the final verdict;
        with an expiry every rule but the final DROP carries the time match."""
        until = self._until(rules)
        if not rules.deny_unknown:
            rules_text = [*rules_text, "-j ACCEPT"]
        if until is None:
            final = ["-j DROP"] if rules.deny_unknown else []
        else:
            rules_text = [f"{until} {text}" for text in rules_text]
            final = ["-j DROP"]
        return [f"-A {self.chain} {text}" for text in [*rules_text, *final]]

    @staticmethod
    def _until(rules: RuleSet) -> str | None:
        """`-m time --datestop <UTC>`: the match holds through the whole second it names,
        so the last second that ends by open_until."""
        if rules.open_until is None:
            return None
        last = datetime.fromtimestamp(math.floor(rules.open_until) - 1, UTC)
        return f"-m time --datestop {last.strftime('%Y-%m-%dT%H:%M:%S')}"

    def _entry(self, op: str, chain: str, mac: str, target: str = "") -> str:
        target = target or ("ACCEPT" if chain == self.whitelist_chain else "DROP")
        return f"{op} {chain} -m mac --mac-source {mac} -j {target}"

    def _body(self, rules: RuleSet, *, jump: bool) -> list[str]:
        # Declaring a chain in a --noflush restore creates it or flushes it: the three
        # chains are emptied and refilled in the same transaction.
        lines = [f":{chain} - [0:0]" for chain in self._chains()]
        if jump:
            lines.append(f"-I {self.jump}")
        # The whitelist chain is looked at first, so a MAC in both lists is accepted
        # without being taken out of the (big) blacklist chain.
        lines += [self._entry("-A", self.whitelist_chain, m) for m in sorted(rules.whitelist)]
        lines += [self._entry("-A", self.blacklist_chain, m) for m in sorted(rules.blacklist)]
        return lines + self._verdict(rules)

    def render(self, rules: RuleSet) -> str:
        """The restore batch; apply inserts `-I <jump>` after the declarations while
        the INPUT jump is missing."""
        return _table([f"# INPUT jump: {self.jump}", *self._body(rules, jump=False)])

    # Applying.

    def check(self) -> None:
        probe = f"{self.chain}-probe"
        batch = _table(
            [
                f":{probe} - [0:0]",
                f"-A {probe} -m mac --mac-source 00:00:00:00:00:00 -j DROP",
                f"-A {probe} -m time --datestop 2038-01-01T00:00:00 -j DROP",
            ]
        )
        try:
            self.runner.run([self.iptables, "--version"])
            self.runner.run([self.restore, "-w", "--noflush", "--test"], stdin=batch)
        except FirewallError as exc:
            raise ConfigError(
                f"{self.name} driver unavailable: {exc.message}; install iptables (of "
                f"[iptables] backend = {self.backend.name}) or use the nftables driver"
            ) from exc
        self.backend.check_alone(self.runner, self._chains())

    def _restore(self, lines: list[str]) -> None:
        self.runner.run([self.restore, "-w", "--noflush"], stdin=_table(lines))

    def _has_jump(self) -> bool:
        result = self.runner.run([self.iptables, "-w", "-C", *self.jump.split()], check=False)
        return result.returncode == 0

    def _replace(self, rules: RuleSet) -> None:
        self._restore(self._body(rules, jump=not self._has_jump()))

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        bl = self.blacklist_chain
        lines = [self._entry("-D", bl, m) for m in sorted(change.blacklist_removed)]
        lines += [self._entry("-A", bl, m) for m in sorted(change.blacklist_added)]
        if change.verdict_changed or change.expiry_changed:
            lines += [f":{self.chain} - [0:0]", *self._verdict(rules)]
        # A batch that deletes anyway (a rule out, the main chain rewritten) pays the
        # commit's wait already: it compacts too.
        compacting = any(line.startswith(("-D ", ":")) for line in lines)
        steps = WhitelistSteps.of(self.base_whitelist, change)
        if compacting:
            whitelist = self._compaction(rules)
        else:
            wl = self.whitelist_chain
            # -I at position 1: the newest word on a MAC comes first in the chain.
            whitelist = [self._entry("-I", f"{wl} 1", m, "RETURN") for m in steps.revoked]
            whitelist += [self._entry("-I", f"{wl} 1", m, "ACCEPT") for m in steps.readmitted]
            whitelist += [self._entry("-A", wl, m) for m in steps.added]
        lines = whitelist + lines
        if not self._has_jump():
            lines.insert(0, f"-I {self.jump}")
        if lines:
            self._restore(lines)
        if compacting:
            self.base_whitelist, self.overrides = rules.whitelist, 0
        else:
            self.base_whitelist |= frozenset(steps.added)
            self.overrides += steps.overrides

    def _compaction(self, rules: RuleSet) -> list[str]:
        """The whitelist chain made exactly the applied whitelist: appended to while
        nothing left it, else emptied and refilled (a small chain)."""
        wl, base = self.whitelist_chain, self.base_whitelist
        if not self.overrides and base <= rules.whitelist:
            return [self._entry("-A", wl, m) for m in sorted(rules.whitelist - base)]
        return [f":{wl} - [0:0]", *(self._entry("-A", wl, m) for m in sorted(rules.whitelist))]

    def _compact(self, rules: RuleSet) -> None:
        lines = self._compaction(rules)
        if lines:
            self._restore(lines)

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


def _table(lines: list[str]) -> str:
    return "\n".join(["*filter", *lines, "COMMIT", ""])
