"""ipset driver: the lists in two hash:mac sets, matched from one iptables chain.

Needs: ipset, iptables-restore (ip6tables-restore for ip_version 6), a kernel with
ip_set, the hash:mac set type and the iptables `set` match; check() tries them and says
which one is missing. Guarantees: each list is filled into a temporary set by one
`ipset restore` and swapped in atomically (`ipset swap`); the chain `<prefix>` is
written by one `iptables-restore --noflush` transaction. A change of a few MACs is one
`ipset restore` of add/del lines. close() rewrites the chain only (the sets stay).
"""

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.iptables_rules import filter_table
from inspector.firewall.ruleset import CLOSED, Delta, RuleSet


class IpsetDriver(IptablesDriver):
    """Sets `<prefix>-wl`, `<prefix>-bl`; chain `<prefix>` (jumped to from INPUT)."""

    name = "ipset"
    #: `ipset del` is no nf_tables commit: removals are deletions.
    uses_overrides = False

    @property
    def whitelist_set(self) -> str:
        return self.whitelist_chain

    @property
    def blacklist_set(self) -> str:
        return self.blacklist_chain

    def _chains(self) -> list[str]:
        return [self.chain]

    def _verdict(self, rules: RuleSet) -> list[str]:
        if not rules.open:
            return [f"-A {self.chain} -j DROP"]
        return self._passes(
            rules,
            [
                f"-m set --match-set {self.whitelist_set} src -j ACCEPT",
                f"-m set --match-set {self.blacklist_set} src -j DROP",
            ],
        )

    def _body(self, rules: RuleSet, *, jump: bool) -> list[str]:
        lines = [f":{self.chain} - [0:0]"]
        if jump:
            lines.append(f"-I {self.jump}")
        return lines + self._verdict(rules)

    def _sets(self, rules: RuleSet) -> str:
        lines = []
        for name, macs in (
            (self.whitelist_set, rules.whitelist),
            (self.blacklist_set, rules.blacklist),
        ):
            new = f"{name}-new"
            lines += [
                f"create {name} hash:mac -exist",
                f"create {new} hash:mac -exist",
                f"flush {new}",
                *(f"add {new} {mac}" for mac in sorted(macs)),
                f"swap {new} {name}",
                f"destroy {new}",
            ]
        return "\n".join([*lines, ""])

    def render(self, rules: RuleSet) -> str:
        return (
            "# ipset restore\n"
            + self._sets(rules)
            + "# iptables-restore --noflush\n"
            + super().render(rules)
        )

    def check(self) -> None:
        probe = f"{self.chain}-probe"
        advice = "use the nftables or iptables driver"
        try:
            self.runner.run(["ipset", "version"])
            self.runner.run([self.iptables, "--version"])
        except FirewallError as exc:
            raise ConfigError(f"ipset driver unavailable: {exc.message}; {advice}") from exc
        try:
            self.runner.run(["ipset", "create", probe, "hash:mac", "-exist"])
        except FirewallError as exc:
            raise ConfigError(
                f"ipset driver unavailable: the kernel refused a hash:mac set "
                f"({exc.message}); {advice}"
            ) from exc
        try:
            batch = filter_table(
                [
                    f":{probe} - [0:0]",
                    f"-A {probe} -m set --match-set {probe} src -j DROP",
                ]
            )
            self.runner.run([self.restore, "-w", "--noflush", "--test"], stdin=batch)
        except FirewallError as exc:
            raise ConfigError(
                f"ipset driver unavailable: iptables cannot match on a set "
                f"({exc.message}); {advice}"
            ) from exc
        finally:
            self.runner.run(["ipset", "destroy", probe], check=False)
        self.backend.check_alone(self.runner, self._chains())

    def _ipset(self, text: str) -> None:
        self.runner.run(["ipset", "restore"], stdin=text)

    def _replace(self, rules: RuleSet) -> None:
        # Sets first: the chain's --match-set needs them to exist.
        self._ipset(self._sets(rules))
        self._restore(self._body(rules, jump=not self._has_jump()))

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        wl, bl = self.whitelist_set, self.blacklist_set
        lines = (
            [f"del {wl} {m} -exist" for m in sorted(change.whitelist_removed)]
            + [f"add {wl} {m} -exist" for m in sorted(change.whitelist_added)]
            + [f"del {bl} {m} -exist" for m in sorted(change.blacklist_removed)]
            + [f"add {bl} {m} -exist" for m in sorted(change.blacklist_added)]
        )
        if lines:
            self._ipset("\n".join([*lines, ""]))
        jump = not self._has_jump()
        if jump or change.verdict_changed or change.expiry_changed:
            self._restore(self._body(rules, jump=jump))

    def _close(self) -> RuleSet | None:
        self._restore(self._body(CLOSED, jump=not self._has_jump()))
        return None  # the sets keep what they held: the next apply rewrites them

    def _remove(self) -> None:
        super()._remove()
        present = set(self.runner.run(["ipset", "list", "-n"]).stdout.split())
        names = [self.whitelist_set, self.blacklist_set]
        names += [f"{name}-new" for name in names]
        doomed = [f"destroy {name}" for name in names if name in present]
        if doomed:
            self._ipset("\n".join([*doomed, ""]))
