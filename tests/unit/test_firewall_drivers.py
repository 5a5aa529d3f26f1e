"""PXE firewall drivers without a kernel: rendered batches against golden files, what each
apply sends (recorded), the dnsmasq hostsdir on a temporary directory, the rule model.

INSPECTOR_UPDATE_GOLDEN=1 rewrites the golden files from the renderers (review the diff).
"""

import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest

from inspector.errors import ConfigError, FirewallError
from inspector.firewall import drivers
from inspector.firewall.commands import Runner, parse_prefix
from inspector.firewall.drivers import DRIVERS, base
from inspector.firewall.drivers.dnsmasq import UNKNOWN_HOSTS, DnsmasqDriver
from inspector.firewall.drivers.ipset import IpsetDriver
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.drivers.noop import NoopDriver
from inspector.firewall.ruleset import CLOSED, RuleSet, delta

GOLDEN = pathlib.Path(__file__).parent / "golden" / "firewall"
UPDATE = bool(os.environ.get("INSPECTOR_UPDATE_GOLDEN"))

A, B, C, D, E = (f"52:54:00:00:00:0{i}" for i in range(1, 6))
LISTS = {"whitelist": frozenset({A, C}), "blacklist": frozenset({B, C, D})}

#: Golden case -> the rule set rendered.
CASES = {
    "closed": CLOSED,
    "closed-with-lists": RuleSet(**LISTS, open=False, deny_unknown=False),
    "open-empty": RuleSet(frozenset(), frozenset(), open=True, deny_unknown=False),
    "open-lists": RuleSet(**LISTS, open=True, deny_unknown=False),
    "deny-unknown": RuleSet(**LISTS, open=True, deny_unknown=True),
}


def make(name, **kwargs):
    if name == "dnsmasq":
        kwargs.setdefault("hostsdir", "/var/lib/inspector/dhcp-hostsdir")
    return DRIVERS[name](**kwargs)


def golden(path: pathlib.Path, text: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with INSPECTOR_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path} differs from the renderer"


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_render_matches_golden(name, case):
    golden(GOLDEN / name / f"{case}.txt", make(name).render(CASES[case]))


@pytest.mark.parametrize("name", ["iptables", "ipset", "nftables"])
def test_render_ip_version_6_matches_golden(name):
    text = make(name, ip_version="6").render(CASES["open-lists"])
    golden(GOLDEN / name / "ipv6.txt", text)
    assert "547" in text
    assert "67 " not in text


def test_render_dnsmasq_with_commands_matches_golden():
    driver = make("dnsmasq", start_command=("start",), stop_command=("stop",))
    text = driver.render(CASES["open-lists"]) + driver.render(CLOSED)
    golden(GOLDEN / "dnsmasq" / "commands.txt", text)


def test_render_is_independent_of_input_order():
    first = RuleSet.of([A, C], [D, B], open=True, deny_unknown=False)
    second = RuleSet.of([C, A], [B, D], open=True, deny_unknown=False)
    for name in DRIVERS:
        assert make(name).render(first) == make(name).render(second)


def test_golden_semantics_in_plain_words():
    # The golden files are reviewed by eye; these are the properties they must show.
    iptables = make("iptables").render(CASES["open-lists"])
    assert f"-A ironic-inspector-wl -m mac --mac-source {C} -j ACCEPT" in iptables
    # C is in both lists: the whitelist chain is looked at first, so C is accepted.
    assert iptables.index("-j ironic-inspector-wl") < iptables.index("-j ironic-inspector-bl")
    assert iptables.rstrip().endswith("-A ironic-inspector -j ACCEPT\nCOMMIT")
    closed = make("iptables").render(CASES["closed-with-lists"])
    assert "-A ironic-inspector -j DROP\nCOMMIT" in closed
    assert "-j ironic-inspector-wl" not in closed
    nft = make("nftables").render(CASES["deny-unknown"])
    # Overrides (revocations since the last compaction) come before the whitelist set;
    # what the whitelist does not accept meets the blacklist, then the final verdict.
    assert (
        "\t\tjump overrides\n\t\tether saddr @whitelist accept\n\t\tgoto after_whitelist\n" in nft
    )
    assert "after_whitelist {\n\t\tether saddr @blacklist drop\n\t\tdrop\n" in nft
    dnsmasq = make("dnsmasq").render(CASES["open-lists"])
    assert f"{C}: {C}\n" in dnsmasq  # one record per MAC: the whitelist wins


# The rule model.


def test_rule_set_refuses_what_is_not_normalised():
    with pytest.raises(ValueError, match="whitelist holds MACs that are not normalised"):
        RuleSet(frozenset({"52:54:00:AB:CD:EF"}), frozenset(), open=True, deny_unknown=False)
    with pytest.raises(ValueError, match="blacklist"):
        RuleSet(frozenset(), frozenset({f"{A}\nCOMMIT"}), open=True, deny_unknown=False)


def test_whitelisted_mac_leaves_the_effective_blacklist():
    rules = RuleSet.of([A], [A, B], open=True, deny_unknown=False)
    assert rules.effective_blacklist == {B}


def test_delta_of_a_node_going_under_introspection_touches_the_whitelist_only():
    old = RuleSet.of([A], [B, C], open=True, deny_unknown=False)
    new = RuleSet.of([A, C], [B, C, D], open=True, deny_unknown=True)
    change = delta(old, new)
    assert change.whitelist_added == {C}
    assert change.blacklist_added == {D}
    assert not change.blacklist_removed
    assert not change.whitelist_removed
    assert change.verdict_changed
    assert change.size == 2
    assert delta(new, new).is_empty


# Construction from the configuration.


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_load_builds_the_configured_driver(conf, name, tmp_path):
    conf.set_override("driver", name, group="pxe_filter")
    conf.set_override("root_helper", "sudo -n", group="pxe_filter")
    conf.set_override("dhcp_hostsdir", str(tmp_path), group="dnsmasq_pxe_filter")
    driver = drivers.load(conf)
    assert type(driver) is DRIVERS[name]
    assert driver.runner.prefix == ("sudo", "-n")
    assert driver.runner.timeout == conf.pxe_filter.command_timeout


def test_load_reads_the_iptables_group(conf):
    conf.set_override("driver", "iptables", group="pxe_filter")
    conf.set_override("dnsmasq_interface", "pxe9", group="iptables")
    conf.set_override("firewall_chain", "pxe-filter", group="iptables")
    conf.set_override("ip_version", "6", group="iptables")
    driver = drivers.load(conf)
    assert driver.jump == "INPUT -i pxe9 -p udp --dport 547 -j pxe-filter"
    assert driver.restore == "ip6tables-restore"


def test_load_splits_the_dnsmasq_commands(conf, tmp_path):
    conf.set_override("driver", "dnsmasq", group="pxe_filter")
    conf.set_override(
        "dnsmasq_start_command", "systemctl start 'dnsmasq@pxe'", group="dnsmasq_pxe_filter"
    )
    driver = drivers.load(conf)
    assert driver.start_command == ("systemctl", "start", "dnsmasq@pxe")
    assert driver.stop_command == ()


def test_unusable_names_are_configuration_errors(conf):
    with pytest.raises(ConfigError, match=r"\[iptables\] firewall_chain"):
        IptablesDriver(chain="a chain; drop")
    with pytest.raises(ConfigError, match="at most 24"):
        NftablesDriver(table="x" * 25)
    with pytest.raises(ConfigError, match=r"\[iptables\] dnsmasq_interface"):
        IptablesDriver(interface='br0" accept')
    with pytest.raises(ConfigError, match="root_helper"):
        parse_prefix("sudo 'unbalanced")


def test_ethoib_interfaces_are_ignored_with_a_warning(conf, caplog):
    conf.set_override("driver", "iptables", group="pxe_filter")
    conf.set_override("ethoib_interfaces", ["eoib0"], group="iptables")
    drivers.load(conf)
    assert "ethoib_interfaces is not supported" in caplog.text


def test_nftables_takes_the_iptables_interface_wildcard():
    assert 'iifname "br*"' in NftablesDriver(interface="br+").render(CLOSED)


# Running commands.


def test_runner_prefixes_and_feeds_stdin():
    result = Runner(prefix=("env", "LC_ALL=C")).run(["cat"], stdin="*filter\n")
    assert result.stdout == "*filter\n"


def test_runner_failure_carries_stderr():
    runner = Runner()
    script = "echo 'Bad rule (does a matching rule exist?)' >&2; exit 4"
    with pytest.raises(FirewallError, match=r"exit status 4: Bad rule") as caught:
        runner.run([sys.executable, "-c", f"import os; os.system({script!r}); exit(4)"])
    assert caught.value.retryable
    assert runner.run(["false"], check=False).returncode == 1


def test_runner_missing_binary_and_timeout():
    with pytest.raises(FirewallError, match="No such file or directory"):
        Runner().run(["/nonexistent/iptables-restore"])
    with pytest.raises(FirewallError, match=r"timed out after 0\.2 s"):
        Runner(timeout=0.2).run(["sleep", "5"])


# What apply sends: a recording runner stands in for the commands.


class Recorder:
    """Runner stand-in: records (argv, stdin); `fail` maps a command name to an exit code."""

    prefix = ()
    timeout = 1.0

    def __init__(self, *, jump_present=True):
        self.calls = []
        self.fail = {}
        self.jump_present = jump_present
        #: What `nft list chain ... input` prints (the hook intact unless changed).
        self.nft_input = (
            "table inet ironic-inspector {\n\tchain input {\n"
            "\t\ttype filter hook input priority filter; policy accept;\n"
            '\t\tiifname "pxe0" meta nfproto ipv4 udp dport 67 jump pxe\n\t}\n}\n'
        )

    def run(self, argv, *, stdin=None, check=True):
        self.calls.append((tuple(argv), stdin))
        code = self.fail.get(argv[0], 0)
        if "-C" in argv:
            code = 0 if self.jump_present else 1
        stdout = self.nft_input if tuple(argv[:3]) == ("nft", "list", "chain") else ""
        result = subprocess.CompletedProcess(argv, code, stdout=stdout, stderr="boom")
        if check and code:
            raise FirewallError(f"{argv[0]} failed: boom")
        return result

    def batches(self, program):
        return [stdin for argv, stdin in self.calls if argv[0] == program and stdin]

    def reset(self):
        self.calls.clear()


FIRST = RuleSet.of([A], [B, C], open=True, deny_unknown=False)
SECOND = RuleSet.of([A, C], [B, C, D], open=True, deny_unknown=False)


def test_iptables_first_apply_is_one_restore_with_the_jump():
    recorder = Recorder(jump_present=False)
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    # A free slot's chains are created while the jump is checked; with the jump missing
    # the live slot is written whole (compact() removes the other one).
    probe, batch = recorder.batches("iptables-restore")
    assert probe == "*filter\n-N ironic-inspector-wl\n-N ironic-inspector-bl\nCOMMIT\n"
    lines = batch.splitlines()
    assert lines[:4] == [
        "*filter",
        ":ironic-inspector - [0:0]",
        ":ironic-inspector-wl - [0:0]",
        ":ironic-inspector-bl - [0:0]",
    ]
    assert lines[4] == "-I INPUT -i pxe0 -p udp --dport 67 -j ironic-inspector"
    assert batch.replace(lines[4] + "\n", "") == driver.render(FIRST).replace(
        "# INPUT jump: INPUT -i pxe0 -p udp --dport 67 -j ironic-inspector\n", ""
    )
    assert ("iptables-restore", "-w", "--noflush") in [argv for argv, _ in recorder.calls]


def test_iptables_small_change_is_a_patch_and_no_change_sends_nothing():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    recorder.reset()
    driver.apply(SECOND)
    (batch,) = recorder.batches("iptables-restore")
    assert batch == (
        "*filter\n"
        f"-A ironic-inspector-wl -m mac --mac-source {C} -j ACCEPT\n"
        f"-A ironic-inspector-bl -m mac --mac-source {D} -j DROP\n"
        "COMMIT\n"
    )
    recorder.reset()
    driver.apply(SECOND)
    assert recorder.batches("iptables-restore") == []
    assert [argv[:3] for argv, _ in recorder.calls] == [("iptables", "-w", "-C")]


def test_iptables_patch_puts_a_lost_jump_back_and_rewrites_the_verdict():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)  # a whole replacement: the other slot may be left over
    assert not driver.is_compact()
    recorder.jump_present = False
    recorder.reset()
    driver.apply(RuleSet(FIRST.whitelist, FIRST.blacklist, open=True, deny_unknown=True))
    (batch,) = recorder.batches("iptables-restore")
    # The main chain rewritten deletes anyway: the other slot goes in the same batch.
    assert batch == (
        "*filter\n"
        "-I INPUT -i pxe0 -p udp --dport 67 -j ironic-inspector\n"
        ":ironic-inspector - [0:0]\n"
        "-A ironic-inspector -j ironic-inspector-wl\n"
        "-A ironic-inspector -j ironic-inspector-bl\n"
        "-A ironic-inspector -j DROP\n"
        ":ironic-inspector-wl2 - [0:0]\n"
        ":ironic-inspector-bl2 - [0:0]\n"
        "-X ironic-inspector-wl2\n"
        "-X ironic-inspector-bl2\n"
        "COMMIT\n"
    )
    assert driver.is_compact()


def test_a_failed_patch_falls_back_to_the_whole_state():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    recorder.reset()
    original = recorder.run

    def fail_first_restore(argv, **kwargs):
        if argv[0] == "iptables-restore" and not recorder.batches("iptables-restore"):
            recorder.calls.append((tuple(argv), kwargs.get("stdin")))
            raise FirewallError("Bad rule (does a matching rule exist in that chain?)")
        return original(argv, **kwargs)

    recorder.run = fail_first_restore
    driver.apply(SECOND)
    patch, probe, whole = recorder.batches("iptables-restore")
    assert "-A ironic-inspector-wl" in patch
    # Which slot is live is unknown after a failure: a probe finds a free one.
    assert probe == "*filter\n-N ironic-inspector-wl\n-N ironic-inspector-bl\nCOMMIT\n"
    assert whole == driver.render_switch(SECOND, 0)


def test_a_failed_apply_forgets_the_state_and_raises():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    recorder.fail["iptables-restore"] = 2
    with pytest.raises(FirewallError):
        driver.apply(FIRST)
    recorder.fail.clear()
    recorder.reset()
    driver.apply(FIRST)  # replaced whole again, not patched from a state never applied
    probe, batch = recorder.batches("iptables-restore")
    assert probe.startswith("*filter\n-N ")
    assert batch == driver.render_switch(FIRST, 0)


def test_big_changes_replace_the_whole_state():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    many = [f"52:54:01:00:{i // 256:02x}:{i % 256:02x}" for i in range(base.PATCH_LIMIT + 1)]
    recorder.reset()
    driver.apply(RuleSet.of([A], many, open=True, deny_unknown=False))
    (batch,) = recorder.batches("nft")
    assert batch.startswith("table inet ironic-inspector {}\ndelete table")


def test_nftables_patch_is_one_transaction_of_elements():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    recorder.reset()
    driver.apply(SECOND)
    (batch,) = recorder.batches("nft")
    t = "inet ironic-inspector"
    assert batch.splitlines() == [
        f"add element {t} whitelist {{ {C} }}",
        f"add element {t} blacklist {{ {D} }}",
    ]
    recorder.reset()
    driver.apply(SECOND)  # nothing changed: one look at the hook, no batch
    assert recorder.batches("nft") == []
    assert [argv for argv, _ in recorder.calls] == [("nft", "list", "chain", t, "input")]
    recorder.nft_input = "table inet ironic-inspector {\n\tchain input {\n\t}\n}\n"
    recorder.reset()
    driver.apply(SECOND)  # somebody flushed the hook chain: replaced whole
    assert recorder.batches("nft") == [driver.render(SECOND)]
    recorder.reset()
    driver.close()
    (batch,) = recorder.batches("nft")
    assert batch == driver.render(CLOSED)


def test_ipset_swaps_sets_then_writes_the_chain_and_patches_elements():
    recorder = Recorder(jump_present=False)
    driver = IpsetDriver(recorder, interface="pxe0")
    driver.apply(FIRST)
    assert [argv[0] for argv, stdin in recorder.calls if stdin] == ["ipset", "iptables-restore"]
    sets, chain = recorder.batches("ipset")[0], recorder.batches("iptables-restore")[0]
    assert f"add ironic-inspector-bl-new {B}\n" in sets
    assert "swap ironic-inspector-bl-new ironic-inspector-bl\n" in sets
    assert "-I INPUT -i pxe0 -p udp --dport 67 -j ironic-inspector\n" in chain
    recorder.jump_present = True
    recorder.reset()
    driver.apply(SECOND)
    assert recorder.batches("ipset") == [
        f"add ironic-inspector-wl {C} -exist\nadd ironic-inspector-bl {D} -exist\n"
    ]
    assert recorder.batches("iptables-restore") == []
    recorder.reset()
    driver.close()
    assert recorder.batches("ipset") == []
    assert recorder.batches("iptables-restore") == [
        "*filter\n:ironic-inspector - [0:0]\n-A ironic-inspector -j DROP\nCOMMIT\n"
    ]
    recorder.reset()
    driver.apply(SECOND)  # the sets were not emptied by close: rewritten whole
    assert "swap ironic-inspector-wl-new" in recorder.batches("ipset")[0]


def test_ipset_check_names_the_missing_kernel_feature():
    recorder = Recorder()
    recorder.fail["ipset"] = 1
    with pytest.raises(ConfigError, match=r"ipset driver unavailable: .*use the nftables"):
        IpsetDriver(recorder).check()


@pytest.mark.parametrize("name", ["iptables", "ipset", "nftables"])
def test_check_without_the_binaries_is_a_clear_configuration_error(name):
    driver = make(name, runner=Runner(prefix=("/nonexistent/helper",)))
    with pytest.raises(ConfigError, match=f"{name} driver unavailable"):
        driver.check()


def test_noop_does_nothing():
    driver = NoopDriver(Recorder())
    driver.check()
    driver.apply(FIRST)
    driver.close()
    driver.remove()
    assert driver.runner.calls == []


# dnsmasq: real files in a temporary hostsdir.


def hostsdir_state(path):
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_dnsmasq_writes_ironic_inspector_files(tmp_path):
    driver = DnsmasqDriver(Recorder(), hostsdir=str(tmp_path))
    driver.check()
    driver.close()
    assert hostsdir_state(tmp_path) == {UNKNOWN_HOSTS: "*:*:*:*:*:*,ignore\n"}
    driver.apply(FIRST)
    assert hostsdir_state(tmp_path) == {
        UNKNOWN_HOSTS: "*:*:*:*:*:*\n",
        A: f"{A}\n",
        B: f"{B},ignore\n",
        C: f"{C},ignore\n",
    }
    driver.apply(RuleSet.of([C], [B], open=True, deny_unknown=True))
    # A left both lists: it is unknown now, and unknown MACs are denied.
    assert hostsdir_state(tmp_path) == {
        UNKNOWN_HOSTS: "*:*:*:*:*:*,ignore\n",
        A: f"{A},ignore\n",
        B: f"{B},ignore\n",
        C: f"{C}\n",
    }
    driver.close()
    assert set(hostsdir_state(tmp_path).values()) == {
        "*:*:*:*:*:*,ignore\n",
        *(f"{m},ignore\n" for m in (A, B, C)),
    }


def test_dnsmasq_writes_restrictive_records_first_and_only_changes(tmp_path, monkeypatch):
    driver = DnsmasqDriver(Recorder(), hostsdir=str(tmp_path))
    driver.apply(FIRST)
    written = []
    original = driver._write
    monkeypatch.setattr(driver, "_write", lambda n, c: (written.append(c), original(n, c)))
    driver.apply(RuleSet.of([B], [A], open=True, deny_unknown=False))
    # C left the blacklist: unknown now, and unknown MACs are answered.
    assert written == [f"{A},ignore\n", f"{B}\n", f"{C}\n"]
    written.clear()
    driver.apply(RuleSet.of([B], [A], open=True, deny_unknown=False))
    assert written == []


def test_dnsmasq_leaves_other_files_alone_and_no_temporary_files(tmp_path):
    (tmp_path / "operator-notes").write_text("mine\n")
    driver = DnsmasqDriver(Recorder(), hostsdir=str(tmp_path))
    driver.apply(FIRST)
    driver.remove()
    assert hostsdir_state(tmp_path) == {"operator-notes": "mine\n"}


def test_dnsmasq_purges_only_with_dnsmasq_stopped(tmp_path):
    (tmp_path / A).write_text(f"{A}\n")
    driver = DnsmasqDriver(Recorder(), hostsdir=str(tmp_path), purge=True)
    driver.close()
    # No stop command: a running dnsmasq would keep A's record if the file went away.
    assert hostsdir_state(tmp_path)[A] == f"{A},ignore\n"

    stopped = tmp_path / "stopped"
    driver = DnsmasqDriver(
        Runner(),
        hostsdir=str(tmp_path),
        purge=True,
        start_command=("rm", "-f", str(stopped)),
        stop_command=("touch", str(stopped)),
    )
    driver.close()
    assert hostsdir_state(tmp_path) == {"stopped": ""}
    driver.apply(FIRST)
    assert not stopped.exists()
    assert hostsdir_state(tmp_path)[A] == f"{A}\n"
    driver.apply(SECOND)  # started once
    driver.apply(RuleSet(SECOND.whitelist, SECOND.blacklist, open=False, deny_unknown=False))
    assert stopped.exists()
    assert set(hostsdir_state(tmp_path)) == {"stopped", UNKNOWN_HOSTS, A, B, C, D}
    driver.close()
    assert hostsdir_state(tmp_path) == {"stopped": ""}


def test_dnsmasq_failed_start_raises_and_a_failed_stop_keeps_files(tmp_path):
    driver = DnsmasqDriver(
        Runner(), hostsdir=str(tmp_path), start_command=("false",), stop_command=("false",)
    )
    with pytest.raises(FirewallError, match="false failed with exit status 1"):
        driver.apply(FIRST)
    driver.close()
    assert hostsdir_state(tmp_path)[A] == f"{A},ignore\n"


def test_dnsmasq_check_refuses_an_unwritable_hostsdir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="dnsmasq driver unavailable: cannot create"):
        DnsmasqDriver(hostsdir=str(blocker / "hosts")).check()


# The leader's expiry (RuleSet.open_until): the kernel closes by itself.

#: A wall clock for the renderers, and an open rule set that expires 2.4567 s later.
NOW = 1_700_000_000.0
EXPIRING = RuleSet.of([A, C], [B, C, D], open=True, deny_unknown=False, open_until=NOW + 2.4567)


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_render_with_expiry_matches_golden(name):
    driver = make(name)
    driver.clock = lambda: NOW
    strict = dataclasses.replace(EXPIRING, deny_unknown=True)
    text = driver.render(EXPIRING) + driver.render(strict)
    golden(GOLDEN / name / "expiring.txt", text)


def test_expiry_is_dropped_when_closed_and_changes_only_the_expiry():
    closed = RuleSet.of([A], [B], open=False, deny_unknown=False, open_until=NOW)
    assert closed.open_until is None
    later = dataclasses.replace(EXPIRING, open_until=NOW + 3)
    change = delta(EXPIRING, later)
    assert change.expiry_changed
    assert not change.verdict_changed
    assert not change.is_empty
    assert delta(FIRST, EXPIRING).verdict_changed  # an expiry came: the chain changes


def test_iptables_expiry_rounds_down_to_the_last_whole_second():
    driver = IptablesDriver(interface="pxe0")
    # 14:13:22.4567 UTC: the time match holds through 14:13:21.999, never past the end.
    rules = dataclasses.replace(EXPIRING, open_until=1_700_000_002.4567)
    assert "-m time --datestop 2023-11-14T22:13:21 -j ironic-inspector-wl" in driver.render(rules)
    rules = dataclasses.replace(EXPIRING, open_until=1_700_000_002.0)
    assert "--datestop 2023-11-14T22:13:21 " in driver.render(rules)


def test_iptables_refresh_rewrites_the_main_chain_only():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(EXPIRING)
    driver.compact()
    recorder.reset()
    driver.apply(dataclasses.replace(EXPIRING, open_until=NOW + 4.2))
    (batch,) = recorder.batches("iptables-restore")
    assert batch == (
        "*filter\n"
        ":ironic-inspector - [0:0]\n"
        "-A ironic-inspector -m time --datestop 2023-11-14T22:13:23 -j ironic-inspector-wl\n"
        "-A ironic-inspector -m time --datestop 2023-11-14T22:13:23 -j ironic-inspector-bl\n"
        "-A ironic-inspector -m time --datestop 2023-11-14T22:13:23 -j ACCEPT\n"
        "-A ironic-inspector -j DROP\n"
        "COMMIT\n"
    )


def test_nftables_refresh_replaces_the_element_and_the_deadline_when_its_second_moves():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.clock = lambda: NOW
    driver.apply(EXPIRING)
    assert "elements = { 67 timeout 2456ms }" in recorder.batches("nft")[0]
    recorder.reset()
    driver.clock = lambda: NOW + 0.5
    driver.apply(dataclasses.replace(EXPIRING, open_until=NOW + 2.9))
    t = "inet ironic-inspector"
    assert recorder.batches("nft") == [
        f"add set {t} open {{ type inet_service; flags timeout; }}\n"
        f"flush set {t} open\n"
        f"add element {t} open {{ 67 timeout 2400ms }}\n"
    ]
    recorder.reset()
    driver.clock = lambda: NOW + 1
    driver.apply(dataclasses.replace(EXPIRING, open_until=NOW + 3.2))  # the second moved
    (batch,) = recorder.batches("nft")
    assert f"add element {t} open {{ 67 timeout 2200ms }}" in batch
    assert f"add rule {t} pxe meta time >= {int(NOW) + 3} drop" in batch
    recorder.reset()
    driver.clock = lambda: NOW + 5
    driver.apply(dataclasses.replace(EXPIRING, open_until=NOW + 4))  # already past
    (batch,) = recorder.batches("nft")
    assert (
        f"add set {t} open {{ type inet_service; flags timeout; }}\nflush set {t} open\n" in batch
    )
    assert "add element" not in batch


def test_nftables_expiry_added_to_an_open_table_declares_the_set_before_the_rule():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.clock = lambda: NOW
    driver.apply(SECOND)
    recorder.reset()
    driver.apply(EXPIRING)
    lines = recorder.batches("nft")[0].splitlines()
    t = "inet ironic-inspector"
    assert lines.index(f"flush set {t} open") < lines.index(f"flush chain {t} pxe")
    assert f"add rule {t} pxe udp dport != @open drop" in lines
    assert f"add rule {t} pxe meta time >= {int(NOW) + 2} drop" in lines


def test_drivers_say_whether_they_can_expire():
    # nftables: the element's timeout is exact to the millisecond, its deadline rule to
    # the second; the port closes at the first of the two.
    assert NftablesDriver.expiry_resolution == 1.0
    assert IptablesDriver.expiry_resolution == IpsetDriver.expiry_resolution == 1.0
    assert DnsmasqDriver.expiry_resolution is None
    assert NoopDriver.expiry_resolution is None
