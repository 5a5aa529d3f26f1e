"""Which iptables binaries the iptables and ipset drivers run ([iptables] backend), and the
look at the other backend that keeps a host from filtering DHCP with both.

Runs nothing but `<tool>-<other backend>-save`; must not write any rule.
"""

import dataclasses
import logging

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.commands import Runner

LOG = logging.getLogger(__name__)

#: [iptables] backend -> the suffix of the binaries' names. auto: the unqualified names,
#: i.e. the backend the host's `iptables` is (its alternatives link), as ironic-inspector.
SUFFIXES = {"auto": "", "nft": "-nft", "legacy": "-legacy"}


@dataclasses.dataclass(frozen=True)
class Backend:
    """`iptables`, `iptables-restore`, `iptables-save` of one backend and IP version."""

    #: auto, nft or legacy.
    name: str
    #: iptables or ip6tables.
    family: str

    @classmethod
    def of(cls, name: str, ip_version: str) -> "Backend":
        if name not in SUFFIXES:
            raise ConfigError(f"[iptables] backend: {name!r} is not one of {', '.join(SUFFIXES)}")
        return cls(name, "ip6tables" if ip_version == "6" else "iptables")

    @property
    def iptables(self) -> str:
        return self.family + SUFFIXES[self.name]

    @property
    def restore(self) -> str:
        return f"{self.iptables}-restore"

    @property
    def save(self) -> str:
        return f"{self.iptables}-save"

    def check_alone(self, runner: Runner, chains: list[str]) -> None:
        """With a backend named explicitly, look at the other one: our chains there (left
        by an earlier setting) are refused, anybody else's rules warned about.

        Both backends' rules see every packet, and each must let it through: a chain of
        ours left in the other backend would keep the PXE port as it last left it
        (closed, most likely: a leader that can never open), unseen by the tools of this
        one. auto never mixes by itself, so it is not looked at.
        """
        if self.name == "auto":
            return
        other = Backend("legacy" if self.name == "nft" else "nft", self.family)
        try:
            saved = runner.run([other.save]).stdout
        except FirewallError as exc:  # not installed, or no such tables in this kernel
            LOG.debug("not looking at the %s backend: %s", other.name, exc.message)
            return
        lines = saved.splitlines()
        left = [c for c in chains if any(line.startswith(f":{c} ") for line in lines)]
        if left:
            raise ConfigError(
                f"[iptables] backend = {self.name}, but the {other.name} backend still "
                f"holds chain(s) {', '.join(left)} (see `{other.save}`): both backends "
                f"filter every packet, so remove them (`{other.iptables} -D INPUT ...`, "
                f"`-F`, `-X`) or set [iptables] backend = {other.name}"
            )
        rules = sum(1 for line in lines if line.startswith("-A "))
        if rules:
            LOG.warning(
                "[iptables] backend = %s, but the %s backend holds %d rules of others: "
                "every packet meets both rule sets and `%s` shows only one of them; "
                "prefer one backend per host (docs/firewall.md)",
                self.name,
                other.name,
                rules,
                self.iptables,
            )
