"""What the iptables driver writes: its chains' rules as restore batch lines, pure.

The main chain `<prefix>` (jumped to from INPUT) holds the verdict; the lists are in one
of two slots of chains, `<prefix>-wl`/`-bl` or `<prefix>-wl2`/`-bl2`. Must not run
anything: iptables.py applies these lines (ipset.py reuses the verdict).
"""

import math
from collections.abc import Iterable
from datetime import UTC, datetime

from inspector.firewall.ruleset import RuleSet

#: The suffixes of the two slots of list chains, `<prefix>-wl<suffix>` and
#: `<prefix>-bl<suffix>`: a whole replacement fills the slot not in use, so that it
#: deletes nothing (an nf_tables transaction that deletes makes iptables-nft-restore
#: wait 10-25 ms on exit, on top of deleting every old rule).
SLOTS = ("", "2")
#: Blacklist entries from which a replacement fills its slot with two restores running at
#: once: iptables-nft-restore spends ~40 ms of one CPU parsing 10,000 rules, and the
#: kernel's share is serialised anyway (nf_tables only).
SPLIT_AT = 2000
#: The first of the two restores' share of the blacklist: the second reads the ruleset's
#: generation after parsing its larger share, by when the first has committed, so it
#: need not start over (iptables-nft-restore does when another commit came between).
FIRST_SHARE = 1 / 3


class IptablesRules:
    """The rendering half of IptablesDriver, given its names, the live `slot` (None:
    unknown), `leftovers`, and base.Driver's `base_whitelist` and `overrides`."""

    chain: str
    interface: str
    port: int
    slot: int | None
    leftovers: bool
    base_whitelist: frozenset[str]
    overrides: int

    @property
    def jump(self) -> str:
        """The INPUT rule that sends DHCP packets on the PXE interface to our chain."""
        return f"INPUT -i {self.interface} -p udp --dport {self.port} -j {self.chain}"

    @property
    def whitelist_chain(self) -> str:
        return self._lists(self.slot or 0)[0]

    @property
    def blacklist_chain(self) -> str:
        return self._lists(self.slot or 0)[1]

    def _lists(self, slot: int) -> tuple[str, str]:
        """The whitelist and blacklist chains of a slot."""
        return f"{self.chain}-wl{SLOTS[slot]}", f"{self.chain}-bl{SLOTS[slot]}"

    def _chains(self) -> list[str]:
        return [self.chain, *self._lists(0), *self._lists(1)]

    def _verdict(self, rules: RuleSet) -> list[str]:
        """The main chain: jumps to the live slot's lists and the final verdict."""
        return self._verdict_for(rules, self.slot or 0)

    def _verdict_for(self, rules: RuleSet, slot: int) -> list[str]:
        # Always ends in an unconditional ACCEPT or DROP: a verdict inserted ahead of an
        # old one hides it whole (_switch).
        if not rules.open:
            return [f"-A {self.chain} -j DROP"]
        return self._passes(rules, [f"-j {chain}" for chain in self._lists(slot)])

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

    @staticmethod
    def _entries(op: str, chain: str, macs: Iterable[str], target: str) -> list[str]:
        # 10,000 lines for a big blacklist: built by concatenation, not a call per MAC.
        head, tail = f"{op} {chain} -m mac --mac-source ", f" -j {target}"
        return [head + mac + tail for mac in sorted(macs)]

    def _fill(self, rules: RuleSet, slot: int) -> tuple[list[str], list[str]]:
        """The whitelist's and the blacklist's rules. The whitelist chain is looked at
        first, so a MAC in both lists is accepted without leaving the (big) blacklist."""
        wl, bl = self._lists(slot)
        white = self._entries("-A", wl, rules.whitelist, "ACCEPT")
        return white, self._entries("-A", bl, rules.blacklist, "DROP")

    def _body(self, rules: RuleSet, *, jump: bool) -> list[str]:
        """The live slot written whole. Declaring a chain in a --noflush restore creates
        it or flushes it: the three chains are emptied and refilled in one transaction."""
        slot = self.slot or 0
        lines = [f":{chain} - [0:0]" for chain in (self.chain, *self._lists(slot))]
        if jump:
            lines.append(f"-I {self.jump}")
        white, black = self._fill(rules, slot)
        return lines + white + black + self._verdict_for(rules, slot)

    def _switch(self, rules: RuleSet, slot: int) -> list[list[str]]:
        """A whole replacement into `slot`, whose chains exist, empty: the fill (two
        batches for a big blacklist), then the verdict inserted at the head of the main
        chain, in front of the old one, which packets then never reach. Only the batch
        with the verdict changes what a packet meets."""
        white, black = self._fill(rules, slot)
        head = f"-I {self.chain} 1 "
        verdict = [head + line.split(" ", 2)[2] for line in self._verdict_for(rules, slot)]
        if len(black) < SPLIT_AT:
            return [white + black + verdict[::-1]]
        first = int(len(black) * FIRST_SHARE)
        return [white + black[:first], black[first:], verdict[::-1]]

    def render(self, rules: RuleSet) -> str:
        """The restore batch of the whole state; apply inserts `-I <jump>` after the
        declarations while the INPUT jump is missing. Onto a live rule set apply sends
        render_switch instead."""
        return filter_table([f"# INPUT jump: {self.jump}", *self._body(rules, jump=False)])

    def render_switch(self, rules: RuleSet, slot: int) -> str:
        """The restore batches of a whole replacement into `slot` while the other is live,
        after the one creating its chains (`-N`); all but the last run at once."""
        return "".join(filter_table(lines) for lines in self._switch(rules, slot))

    def _tidy(self, rules: RuleSet) -> list[str]:
        """The main chain rewritten with the live verdict alone and, when a replacement
        may have left it, the other slot's chains emptied and removed."""
        lines = [f":{self.chain} - [0:0]", *self._verdict(rules)]
        if self.leftovers:
            other = self._lists(1 - (self.slot or 0))
            lines += [f":{chain} - [0:0]" for chain in other]
            lines += [f"-X {chain}" for chain in other]
        return lines

    def _compaction(self, rules: RuleSet) -> list[str]:
        """The whitelist chain made exactly the applied whitelist: appended to while
        nothing left it, else emptied and refilled (a small chain)."""
        wl, base = self.whitelist_chain, self.base_whitelist
        if not self.overrides and base <= rules.whitelist:
            return self._entries("-A", wl, rules.whitelist - base, "ACCEPT")
        return [f":{wl} - [0:0]", *self._entries("-A", wl, rules.whitelist, "ACCEPT")]


def filter_table(lines: list[str]) -> str:
    """An iptables-restore batch of `lines` on the filter table, one transaction."""
    return "\n".join(["*filter", *lines, "COMMIT", ""])
