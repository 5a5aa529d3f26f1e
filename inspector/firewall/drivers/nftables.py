"""nftables driver: one `inet` table with two ether_addr sets, written by one `nft -f -`.

Needs: nft (nftables 0.9.1 or later) and a kernel with nf_tables, the inet family and
ether_addr sets. Guarantees: an nft batch is one kernel transaction, so every apply
(delete the table and recreate it whole, or add/delete a few set elements) is atomic.
An apply with nothing to change lists the hook chain and rewrites the table whole if
the jump is gone; a patch of a table that went away fails and is replaced whole. The
whitelist set is looked at before the blacklist set. RuleSet.open_until closes the
port twice over, by the kernel alone: the one element of the set `open` (the DHCP port)
times out then (relative, so a step of the wall clock does not move it), and a
`meta time >=` rule drops from its last whole second on (absolute, so a batch applied
late does not extend it). A refresh replaces the element in one transaction, and the
chain when that second moves.
A whitelist removal deletes nothing on the hot path: it inserts a rule into the chain
`overrides` (looked at before the whitelist set) sending the MAC on to `after_whitelist`,
the blacklist and the final verdict; compact() later deletes it from the set and
flushes `overrides` (base.WhitelistSteps). The table is named after [iptables]
firewall_chain and touches only DHCP packets (UDP 67, or 547 with ip_version 6) arriving
on [iptables] dnsmasq_interface.
"""

import math
from collections.abc import Iterable
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
from inspector.firewall.drivers.iptables import DHCP_PORT
from inspector.firewall.ruleset import CLOSED, Delta, RuleSet, seconds_left

#: nft's own limit on table names is generous; keep the iptables one for a shared option.
MAX_TABLE = 24
_FAMILY = {"4": "ipv4", "6": "ipv6"}


class NftablesDriver(Driver):
    """Table `inet <prefix>`: sets whitelist and blacklist; chains input (the hook), pxe,
    overrides and after_whitelist."""

    name = "nftables"
    expiry_resolution = 1.0
    uses_overrides = True

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        interface: str = "br-ctlplane",
        table: str = "ironic-inspector",
        ip_version: str = "4",
    ) -> None:
        super().__init__(runner)
        if ip_version not in DHCP_PORT:
            raise ConfigError(f"[iptables] ip_version: {ip_version!r} is not 4 or 6")
        # iptables' trailing-+ wildcard is nft's trailing *.
        self.interface = checked_interface(interface).replace("+", "*")
        self.table = "inet " + checked_name(table, "[iptables] firewall_chain", MAX_TABLE)
        self.ip_version = ip_version

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, runner: Runner) -> Self:
        return cls(
            runner,
            interface=conf.iptables.dnsmasq_interface,
            table=conf.iptables.firewall_chain,
            ip_version=conf.iptables.ip_version,
        )

    def _hook_rule(self) -> str:
        family, port = _FAMILY[self.ip_version], DHCP_PORT[self.ip_version]
        return f'iifname "{self.interface}" meta nfproto {family} udp dport {port} jump pxe'

    @staticmethod
    def _verdict(rules: RuleSet) -> list[str]:
        """The chain pxe: the expiry, the overrides, the whitelist, then the rest."""
        if not rules.open:
            return ["drop"]
        # With an expiry, a port missing from @open (its element timed out) is closed,
        # and so is any packet once the deadline's second has come.
        expiry = []
        if rules.open_until is not None:
            expiry = ["udp dport != @open drop", f"meta time >= {_second(rules)} drop"]
        return [
            *expiry,
            "jump overrides",
            "ether saddr @whitelist accept",
            "goto after_whitelist",
        ]

    @staticmethod
    def _after_whitelist(rules: RuleSet) -> list[str]:
        """Where a MAC not whitelisted (or revoked by an override) is judged."""
        if not rules.open:
            return ["drop"]
        return ["ether saddr @blacklist drop", "drop" if rules.deny_unknown else "accept"]

    @staticmethod
    def _chain(name: str, lines: list[str]) -> list[str]:
        return [f"\tchain {name} {{", *(f"\t\t{line}" for line in lines), "\t}"]

    @staticmethod
    def _set(name: str, macs: frozenset[str]) -> list[str]:
        lines = [f"\tset {name} {{", "\t\ttype ether_addr"]
        if macs:
            lines.append("\t\telements = {")
            lines.append(",\n".join(f"\t\t\t{mac}" for mac in sorted(macs)))
            lines.append("\t\t}")
        return [*lines, "\t}"]

    def _open_element(self, rules: RuleSet) -> list[str]:
        """The element of @open, `67 timeout 2400ms`, while time is left (else none)."""
        assert rules.open_until is not None
        left = round(seconds_left(rules.open_until, self.clock()) * 1000)
        return [f"{DHCP_PORT[self.ip_version]} timeout {left}ms"] if left > 0 else []

    def _open_set(self, rules: RuleSet) -> list[str]:
        if rules.open_until is None:
            return []
        lines = ["\tset open {", "\t\ttype inet_service", "\t\tflags timeout"]
        elements = self._open_element(rules)
        if elements:
            lines.append(f"\t\telements = {{ {elements[0]} }}")
        return [*lines, "\t}"]

    def render(self, rules: RuleSet) -> str:
        # Adding the table first makes the delete succeed on a first apply; both and the
        # new content are one transaction.
        lines = [
            f"table {self.table} {{}}",
            f"delete table {self.table}",
            f"table {self.table} {{",
            *self._set("whitelist", rules.whitelist),
            *self._set("blacklist", rules.blacklist),
            *self._open_set(rules),
            # Chains before the rules that jump to them.
            *self._chain("overrides", []),
            *self._chain("after_whitelist", self._after_whitelist(rules)),
            *self._chain("pxe", self._verdict(rules)),
            "\tchain input {",
            "\t\ttype filter hook input priority filter; policy accept;",
            f"\t\t{self._hook_rule()}",
            "\t}",
            "}",
        ]
        return "\n".join([*lines, ""])

    def check(self) -> None:
        # The open rule set with an expiry: nft and the kernel must take set timeouts.
        probe = RuleSet(
            frozenset(), frozenset(), open=True, deny_unknown=True, open_until=self.clock() + 60
        )
        try:
            self.runner.run(["nft", "--version"])
            self.runner.run(["nft", "--check", "-f", "-"], stdin=self.render(CLOSED))
            self.runner.run(["nft", "--check", "-f", "-"], stdin=self.render(probe))
        except FirewallError as exc:
            raise ConfigError(
                f"nftables driver unavailable: {exc.message}; install nftables or use "
                f"the iptables driver"
            ) from exc

    def _nft(self, text: str) -> None:
        self.runner.run(["nft", "-f", "-"], stdin=text)

    def _replace(self, rules: RuleSet) -> None:
        self._nft(self.render(rules))

    def _is_hooked(self) -> bool:
        """Whether our input chain still holds its hook and jump (one listing; nft reads
        the whole table for it, about 30 ms with 10,000 elements)."""
        listing = self.runner.run(["nft", "list", "chain", self.table, "input"], check=False)
        text = listing.stdout
        return listing.returncode == 0 and "hook input" in text and self._hook_rule() in text

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        # Nothing changed (the periodic sync): look that the hook is still there; a
        # listing costs about as much as the rest, so a real change does without it and
        # fails, then is replaced whole, if the table went away (`nft flush ruleset`).
        # Nothing unchanged is re-stated: a batch that deletes anything spends 10-25 ms
        # in the kernel's commit, an add-only batch 3-5 ms (bench/firewall.py).
        if change.is_empty:
            if not self._is_hooked():
                raise FirewallError(f"the hook of table {self.table} is gone")
            return
        t = self.table
        lines = _elements("delete", t, "blacklist", change.blacklist_removed)
        lines += _elements("add", t, "blacklist", change.blacklist_added)
        if rules.open_until is not None and (change.expiry_changed or change.verdict_changed):
            # `add set` is a no-op when it exists; flush + add replaces the element (and
            # its timeout) in this one transaction, whatever the kernel held.
            lines.append(f"add set {t} open {{ type inet_service; flags timeout; }}")
            lines.append(f"flush set {t} open")
            lines += [f"add element {t} open {{ {e} }}" for e in self._open_element(rules)]
        if change.verdict_changed:
            lines.append(f"flush chain {t} after_whitelist")
            lines += [f"add rule {t} after_whitelist {x}" for x in self._after_whitelist(rules)]
        if change.verdict_changed or _second(previous) != _second(rules):
            lines.append(f"flush chain {t} pxe")
            lines += [f"add rule {t} pxe {line}" for line in self._verdict(rules)]
        # A batch that deletes anyway pays the commit's wait already: it compacts too.
        if any(line.startswith(("delete", "flush")) for line in lines):
            self._nft("\n".join([*self._compaction(rules), *lines, ""]))
            self.base_whitelist, self.overrides = rules.whitelist, 0
            return
        steps = WhitelistSteps.of(self.base_whitelist, change)
        overrides = [
            *(
                f"insert rule {t} overrides ether saddr {m} goto after_whitelist"
                for m in steps.revoked
            ),
            *(f"insert rule {t} overrides ether saddr {m} accept" for m in steps.readmitted),
        ]
        whitelist = _elements("add", t, "whitelist", steps.added)
        self._nft("\n".join([*overrides, *whitelist, *lines, ""]))
        self.base_whitelist |= frozenset(steps.added)
        self.overrides += steps.overrides

    def _compaction(self, rules: RuleSet) -> list[str]:
        """The whitelist set made exactly the applied one, and no overrides."""
        t = self.table
        lines = _elements("delete", t, "whitelist", self.base_whitelist - rules.whitelist)
        lines += _elements("add", t, "whitelist", rules.whitelist - self.base_whitelist)
        return [*lines, f"flush chain {t} overrides"] if self.overrides else lines

    def _compact(self, rules: RuleSet) -> None:
        self._nft("\n".join([*self._compaction(rules), ""]))

    def _remove(self) -> None:
        self._nft(f"table {self.table} {{}}\ndelete table {self.table}\n")


def _elements(verb: str, table: str, name: str, macs: Iterable[str]) -> list[str]:
    """`add element inet t whitelist { a, b }` (none for no MACs)."""
    macs = sorted(macs)
    return [f"{verb} element {table} {name} {{ {', '.join(macs)} }}"] if macs else []


def _second(rules: RuleSet) -> int | None:
    """The absolute deadline of the `meta time` rule: open_until's whole second."""
    return None if rules.open_until is None else math.floor(rules.open_until)
