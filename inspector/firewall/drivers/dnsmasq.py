"""dnsmasq driver: one file per MAC in dnsmasq's --dhcp-hostsdir, as ironic-inspector wrote them.

Needs: a dnsmasq (2.73 or later: inotify on the hostsdir) run with `--dhcp-hostsdir` set
to [dnsmasq_pxe_filter] dhcp_hostsdir and `dhcp-ignore=tag:!known` (so an empty
hostsdir answers nobody), and that directory writable by us. No privileges otherwise,
and it works behind DHCP relays. Guarantees: each file is replaced atomically (temporary
dotfile, which dnsmasq skips, then rename), restrictive contents are written before
permissive ones, and a pass writes only the files whose content changes. Files are never
deleted under a running dnsmasq: it keeps a deleted file's record until restarted.
Closed: every MAC file `<mac>,ignore`, the wildcard file `*:*:*:*:*:*,ignore`, and
dnsmasq stopped when [dnsmasq_pxe_filter] dnsmasq_stop_command is set.
"""

import logging
import os
import pathlib
from typing import Self

from oslo_config import cfg

from inspector.errors import ConfigError, FirewallError
from inspector.firewall.commands import Runner, parse_prefix
from inspector.firewall.drivers.base import Driver
from inspector.firewall.ruleset import CLOSED, Delta, RuleSet
from inspector.macs import is_normal_mac

LOG = logging.getLogger(__name__)

#: The file holding the wildcard record for MACs without a file of their own (the name
#: ironic-inspector used).
UNKNOWN_HOSTS = "unknown_hosts_filter"
_WILDCARD = "*:*:*:*:*:*"


def _record(mac: str, allow: bool) -> str:
    return f"{mac}\n" if allow else f"{mac},ignore\n"


def _is_ours(name: str) -> bool:
    return name == UNKNOWN_HOSTS or is_normal_mac(name)


class DnsmasqDriver(Driver):
    """Files `<hostsdir>/<mac>` and `<hostsdir>/unknown_hosts_filter`."""

    name = "dnsmasq"

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        hostsdir: str,
        purge: bool = True,
        start_command: tuple[str, ...] = (),
        stop_command: tuple[str, ...] = (),
    ) -> None:
        super().__init__(runner)
        self.hostsdir = pathlib.Path(hostsdir)
        self.purge = purge
        self.start_command = tuple(start_command)
        self.stop_command = tuple(stop_command)
        # What our files in the hostsdir hold; None: read it before the next pass.
        self._disk: dict[str, str] | None = None
        # Whether the dnsmasq we start and stop runs; None: we do not know.
        self._running: bool | None = None
        self._begun = False

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, runner: Runner) -> Self:
        group = conf.dnsmasq_pxe_filter
        return cls(
            runner,
            hostsdir=group.dhcp_hostsdir,
            purge=group.purge_dhcp_hostsdir,
            start_command=parse_prefix(
                group.dnsmasq_start_command, "[dnsmasq_pxe_filter] dnsmasq_start_command"
            ),
            stop_command=parse_prefix(
                group.dnsmasq_stop_command, "[dnsmasq_pxe_filter] dnsmasq_stop_command"
            ),
        )

    # What the files hold.

    @staticmethod
    def _allows_others(rules: RuleSet) -> bool:
        """Whether a MAC in neither list gets an answer."""
        return rules.open and not rules.deny_unknown

    def files(self, rules: RuleSet) -> dict[str, str]:
        """File name -> content for the wildcard and every MAC the rules name."""
        result = {UNKNOWN_HOSTS: _record(_WILDCARD, self._allows_others(rules))}
        for mac in rules.effective_blacklist:
            result[mac] = _record(mac, False)
        for mac in rules.whitelist:
            result[mac] = _record(mac, rules.open)
        return result

    def _content(self, mac: str, rules: RuleSet) -> str:
        """The record of one MAC, named by the rules or not (then: the unknown policy)."""
        if mac in rules.whitelist:
            return _record(mac, rules.open)
        return _record(mac, mac not in rules.blacklist and self._allows_others(rules))

    def render(self, rules: RuleSet) -> str:
        lines = [f"# dhcp-hostsdir {self.hostsdir}: file: content"]
        files = self.files(rules)
        lines.append(f"{UNKNOWN_HOSTS}: {files.pop(UNKNOWN_HOSTS).strip()}")
        lines += [f"{name}: {content.strip()}" for name, content in sorted(files.items())]
        other = ",ignore" if not self._allows_others(rules) else ""
        lines.append(f"# any other <mac> file already there: <mac>{other}")
        if rules.open and self.start_command:
            lines.append("# then dnsmasq_start_command, unless it already ran")
        if not rules.open and self.stop_command:
            lines.append("# then dnsmasq_stop_command")
        return "\n".join([*lines, ""])

    # Applying.

    def check(self) -> None:
        try:
            self.hostsdir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"dnsmasq driver unavailable: cannot create [dnsmasq_pxe_filter] "
                f"dhcp_hostsdir {self.hostsdir}: {exc.strerror}"
            ) from exc
        if not os.access(self.hostsdir, os.W_OK | os.X_OK):
            raise ConfigError(
                f"dnsmasq driver unavailable: [dnsmasq_pxe_filter] dhcp_hostsdir "
                f"{self.hostsdir} is not writable by this process"
            )

    def _replace(self, rules: RuleSet) -> None:
        try:
            self._sync(rules)
        except OSError as exc:
            self._disk = None
            raise FirewallError(f"dnsmasq hostsdir {self.hostsdir}: {exc}") from exc

    def _patch(self, previous: RuleSet, rules: RuleSet, change: Delta) -> None:
        if change.verdict_changed or self._disk is None:
            self._replace(rules)
            return
        touched = (
            change.whitelist_added
            | change.whitelist_removed
            | change.blacklist_added
            | change.blacklist_removed
        )
        try:
            self._write_changes(self._disk, {mac: self._content(mac, rules) for mac in touched})
        except OSError as exc:
            self._disk = None
            raise FirewallError(f"dnsmasq hostsdir {self.hostsdir}: {exc}") from exc

    def _sync(self, rules: RuleSet) -> None:
        self._begin()
        disk = self._disk if self._disk is not None else self._read()
        self._disk = disk
        desired = self.files(rules)
        allow = self._allows_others(rules)
        for name in disk:
            desired.setdefault(name, _record(name, allow))
        self._write_changes(disk, desired)
        if rules.open and self.start_command and self._running is not True:
            self.runner.run(self.start_command)
            self._running = True
        if not rules.open:
            self._stop()

    def _write_changes(self, disk: dict[str, str], desired: dict[str, str]) -> None:
        changed = {name: text for name, text in desired.items() if disk.get(name) != text}
        # Closing records first: mid-pass, nobody is answered who will not be at the end.
        for name in sorted(changed, key=lambda n: (not changed[n].endswith(",ignore\n"), n)):
            self._write(name, changed[name])
            disk[name] = changed[name]

    def _begin(self) -> None:
        """Once per driver: purge (only with dnsmasq stopped), as ironic-inspector did."""
        if self._begun:
            return
        self._begun = True
        if self.purge and self._stop():
            self._delete_ours()

    def _stop(self) -> bool:
        """Run the stop command unless dnsmasq is known stopped; True if it is stopped."""
        if not self.stop_command:
            return False
        if self._running is False:
            return True
        result = self.runner.run(self.stop_command, check=False)
        if result.returncode != 0:
            LOG.warning(
                "dnsmasq_stop_command failed (exit %d): %s; the hostsdir stays closed",
                result.returncode,
                (result.stderr or "").strip(),
            )
            return False
        self._running = False
        return True

    def _read(self) -> dict[str, str]:
        disk = {}
        for entry in os.scandir(self.hostsdir):
            if _is_ours(entry.name) and entry.is_file():
                disk[entry.name] = pathlib.Path(entry.path).read_text()
        return disk

    def _write(self, name: str, content: str) -> None:
        temporary = os.path.join(self.hostsdir, f".{name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(descriptor, content.encode())
        finally:
            os.close(descriptor)
        # dnsmasq reads the file on IN_MOVED_TO, whole; it skips dotfiles. No fsync: the
        # hostsdir is purged or rewritten on start, it needs no durability.
        os.replace(temporary, os.path.join(self.hostsdir, name))

    def _delete_ours(self) -> None:
        for entry in os.scandir(self.hostsdir):
            name = entry.name
            if _is_ours(name) or (name.startswith(".") and _is_ours(name[1:-4])):
                os.unlink(entry.path)
        self._disk = {}

    def _close(self) -> RuleSet | None:
        self._replace(CLOSED)
        if self.purge and self._running is False:
            try:
                self._delete_ours()
            except OSError as exc:
                self._disk = None
                raise FirewallError(f"dnsmasq hostsdir {self.hostsdir}: {exc}") from exc
        return CLOSED

    def _remove(self) -> None:
        self._stop()
        try:
            self._delete_ours()
        except OSError as exc:
            raise FirewallError(f"dnsmasq hostsdir {self.hostsdir}: {exc}") from exc
        self._disk = None
