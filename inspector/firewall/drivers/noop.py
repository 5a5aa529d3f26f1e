"""noop driver: no filtering at all; every method succeeds and changes nothing.

Needs nothing and guarantees nothing: the PXE service answers whoever asks, on every
host. For a first start without privileges, or when something else guards DHCP.
"""

from typing import Self

from oslo_config import cfg

from inspector.firewall.commands import Runner
from inspector.firewall.drivers.base import Driver
from inspector.firewall.ruleset import Delta, RuleSet


class NoopDriver(Driver):
    name = "noop"

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, runner: Runner) -> Self:
        return cls(runner)

    def render(self, rules: RuleSet) -> str:
        return "# noop: no filtering\n"

    def _replace(self, rules: RuleSet) -> None:
        pass

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        pass

    def _close(self) -> RuleSet | None:
        return None

    def _remove(self) -> None:
        pass
