"""Whitelist removals without deletions: the overrides of the iptables and nftables
drivers, their compaction, and a model of the kernel's evaluation checking that a
revoked MAC is never whitelisted whatever the order of adds, removals and compactions.
Also the [iptables] backend's binaries and its look at the other backend.
"""

import random
import re

import pytest

from inspector.errors import ConfigError, FirewallError
from inspector.firewall import drivers
from inspector.firewall.drivers import base
from inspector.firewall.drivers.base import WhitelistSteps
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.drivers.xtables import Backend
from inspector.firewall.manager import FirewallManager
from inspector.firewall.ruleset import RuleSet, delta
from inspector.lifecycle import Lifecycle
from tests.unit.test_firewall_drivers import Recorder

A, B, C, D = (f"52:54:00:00:00:0{i}" for i in range(1, 5))
T = "inet ironic-inspector"
WL = "ironic-inspector-wl"


def rules(whitelist, blacklist=(B, D), **kwargs):
    return RuleSet.of(whitelist, blacklist, open=True, deny_unknown=False, **kwargs)


def test_steps_add_new_macs_and_override_the_others():
    change = delta(rules([A, B]), rules([A, C, D]))
    steps = WhitelistSteps.of(frozenset({A, B, D}), change)
    assert steps == WhitelistSteps(added=(C,), readmitted=(D,), revoked=(B,))
    assert steps.overrides == 2


def test_nftables_removal_and_readmission_only_insert_rules():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.apply(rules([A]))
    recorder.reset()
    driver.apply(rules([A, C]))  # new: into the set
    driver.apply(rules([A]))  # revoked: past the whitelist, to the blacklist
    driver.apply(rules([A, C]))  # readmitted: accepted before the revocation is seen
    assert recorder.batches("nft") == [
        f"add element {T} whitelist {{ {C} }}\n",
        f"insert rule {T} overrides ether saddr {C} goto after_whitelist\n",
        f"insert rule {T} overrides ether saddr {C} accept\n",
    ]
    assert not any(b.startswith(("delete", "flush")) for b in recorder.batches("nft"))
    assert (driver.overrides, driver.base_whitelist) == (2, {A, C})
    driver.apply(rules([A]))
    recorder.reset()
    assert driver.compact()
    assert recorder.batches("nft") == [
        f"delete element {T} whitelist {{ {C} }}\nflush chain {T} overrides\n"
    ]
    assert (driver.overrides, driver.base_whitelist, driver.is_compact()) == (0, {A}, True)
    recorder.reset()
    assert not driver.compact()  # nothing left to fold: no batch
    assert recorder.calls == []


def test_nftables_batch_that_deletes_anyway_compacts_too():
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.apply(rules([A, C]))
    driver.apply(rules([A]))
    recorder.reset()
    driver.apply(rules([A], blacklist=[B]))  # D leaves the blacklist: a deletion
    (batch,) = recorder.batches("nft")
    assert batch.splitlines() == [
        f"delete element {T} whitelist {{ {C} }}",
        f"flush chain {T} overrides",
        f"delete element {T} blacklist {{ {D} }}",
    ]
    assert driver.is_compact()


def test_iptables_removal_and_readmission_only_insert_rules():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(rules([A]))
    driver.compact()  # the other slot a whole replacement may leave
    recorder.reset()
    driver.apply(rules([A, C]))
    driver.apply(rules([A]))
    driver.apply(rules([A, C]))
    assert recorder.batches("iptables-restore") == [
        f"*filter\n-A {WL} -m mac --mac-source {C} -j ACCEPT\nCOMMIT\n",
        f"*filter\n-I {WL} 1 -m mac --mac-source {C} -j RETURN\nCOMMIT\n",
        f"*filter\n-I {WL} 1 -m mac --mac-source {C} -j ACCEPT\nCOMMIT\n",
    ]
    driver.apply(rules([A]))
    recorder.reset()
    assert driver.compact()
    assert recorder.batches("iptables-restore") == [
        f"*filter\n:{WL} - [0:0]\n-A {WL} -m mac --mac-source {A} -j ACCEPT\nCOMMIT\n"
    ]


def test_too_many_overrides_are_compacted_by_the_apply_itself(monkeypatch):
    monkeypatch.setattr(base, "MAX_OVERRIDES", 2)
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    driver.apply(rules([A, B, C]))
    driver.apply(rules([A, B]))
    driver.apply(rules([A]))
    assert driver.overrides == 2
    recorder.reset()
    driver.apply(rules([]))
    revoke, compaction = recorder.batches("nft")
    assert revoke.startswith(f"insert rule {T} overrides ether saddr {A} goto")
    assert compaction.startswith(f"delete element {T} whitelist {{ {A}, {B}, {C} }}")
    assert driver.is_compact()


def test_drivers_without_overrides_have_nothing_to_compact(tmp_path):
    for name in ("ipset", "dnsmasq", "noop"):
        kwargs = {"hostsdir": str(tmp_path)} if name == "dnsmasq" else {}
        driver = drivers.DRIVERS[name](Recorder(), **kwargs)
        driver.apply(rules([A]))
        driver.apply(rules([]))
        assert driver.is_compact()
        assert not driver.compact()


# A model of what the kernel does with the batches: which MACs the whitelist accepts.


def iptables_whitelisted(chain: list[tuple[str, str]], mac: str) -> bool:
    """The first rule of the whitelist chain matching `mac` decides: ACCEPT, or RETURN
    (back to the main chain, on to the blacklist); none: not whitelisted."""
    return next((target == "ACCEPT" for m, target in chain if m == mac), False)


def run_iptables(chain: list[tuple[str, str]], batch: str) -> None:
    for line in batch.splitlines():
        if line == f":{WL} - [0:0]":
            chain.clear()
        elif match := re.fullmatch(rf"-(A|I) {WL}( 1)? -m mac --mac-source (\S+) -j (\w+)", line):
            entry = (match[3], match[4])
            chain.insert(0, entry) if match[1] == "I" else chain.append(entry)


def nft_whitelisted(state: dict, mac: str) -> bool:
    for m, verdict in state["overrides"]:
        if m == mac:
            return verdict == "accept"
    return mac in state["set"]


def run_nft(state: dict, batch: str) -> None:
    for line in batch.splitlines():
        if line.startswith(f"table {T} {{"):
            state.update(set=set(), overrides=[])
        elif line == f"flush chain {T} overrides":
            state["overrides"].clear()
        elif match := re.fullmatch(rf"(add|delete) element {T} whitelist \{{ (.*) \}}", line):
            macs = set(match[2].split(", "))
            state["set"] = state["set"] | macs if match[1] == "add" else state["set"] - macs
        elif match := re.fullmatch(rf"insert rule {T} overrides ether saddr (\S+) (\w+).*", line):
            state["overrides"].insert(0, (match[1], match[2]))


@pytest.mark.parametrize("seed", range(20))
def test_random_changes_and_compactions_keep_exactly_the_whitelist(seed):
    rng = random.Random(seed)
    macs = [f"52:54:00:00:01:{i:02x}" for i in range(6)]
    ipt, nft = Recorder(), Recorder()
    iptables, nftables = (
        IptablesDriver(ipt, interface="pxe0"),
        NftablesDriver(nft, interface="pxe0"),
    )
    chain: list[tuple[str, str]] = []
    state: dict = {"set": set(), "overrides": []}
    for step in range(40):
        whitelist = {m for m in macs if rng.random() < 0.5}
        desired = rules(whitelist, blacklist=macs)
        ipt.reset(), nft.reset()
        if step % 7 == 6:
            iptables.compact(), nftables.compact()
        else:
            iptables.apply(desired), nftables.apply(desired)
        for batch in ipt.batches("iptables-restore"):
            run_iptables(chain, batch.replace("*filter\n", "").replace("COMMIT\n", ""))
        for batch in nft.batches("nft"):
            if batch.startswith(f"table {T} {{}}"):
                state = {"set": set(nft_table_whitelist(batch)), "overrides": []}
            else:
                run_nft(state, batch)
        expected = nftables._applied.whitelist
        assert {m for m in macs if iptables_whitelisted(chain, m)} == expected
        assert {m for m in macs if nft_whitelisted(state, m)} == expected
        if step % 7 == 6:
            assert len(chain) == len(expected)
            assert state == {"set": set(expected), "overrides": []}


def nft_table_whitelist(table: str) -> set[str]:
    """The whitelist set's elements in a whole nft table."""
    body = table.split("set whitelist {", 1)[1].split("}", 1)[0]
    return set(re.findall(r"52(?::[0-9a-f]{2}){5}", body))


# [iptables] backend.


@pytest.mark.parametrize(
    ("backend", "ip_version", "expected"),
    [
        ("auto", "4", ("iptables", "iptables-restore", "iptables-save")),
        ("nft", "4", ("iptables-nft", "iptables-nft-restore", "iptables-nft-save")),
        ("legacy", "6", ("ip6tables-legacy", "ip6tables-legacy-restore", "ip6tables-legacy-save")),
    ],
)
def test_backend_names_the_binaries(backend, ip_version, expected):
    driver = IptablesDriver(backend=backend, ip_version=ip_version)
    assert (driver.iptables, driver.restore, driver.save) == expected


def test_backend_from_the_configuration(conf):
    conf.set_override("driver", "iptables", group="pxe_filter")
    conf.set_override("backend", "legacy", group="iptables")
    assert drivers.load(conf).restore == "iptables-legacy-restore"
    with pytest.raises(ConfigError, match="backend"):
        Backend.of("both", "4")


class SaveRecorder(Recorder):
    """A Recorder whose `*-save` prints `saved`."""

    def __init__(self, saved):
        super().__init__()
        self.saved = saved

    def run(self, argv, *, stdin=None, check=True):
        result = super().run(argv, stdin=stdin, check=check)
        if argv[0].endswith("-save"):
            result.stdout = self.saved
        return result


def test_a_named_backend_refuses_our_chains_in_the_other_one():
    saved = "*filter\n:INPUT ACCEPT [0:0]\n:ironic-inspector-bl - [0:0]\nCOMMIT\n"
    recorder = SaveRecorder(saved)
    with pytest.raises(ConfigError, match=r"legacy backend still holds chain\(s\) ironic-in"):
        IptablesDriver(recorder, backend="nft").check()
    assert ("iptables-legacy-save",) in [argv for argv, _ in recorder.calls]


def test_a_named_backend_warns_about_rules_of_others_in_the_other_one(caplog):
    recorder = SaveRecorder("*filter\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\nCOMMIT\n")
    IptablesDriver(recorder, backend="legacy").check()
    assert "the nft backend holds 1 rules of others" in caplog.text


def test_auto_does_not_look_at_another_backend():
    recorder = SaveRecorder(":ironic-inspector - [0:0]\n")
    IptablesDriver(recorder).check()
    assert not [argv for argv, _ in recorder.calls if argv[0].endswith("-save")]


# The manager compacts with its periodic check.


def test_the_manager_compacts_and_rewrites_whole_when_compaction_fails(monkeypatch):
    recorder = Recorder()
    driver = NftablesDriver(recorder, interface="pxe0")
    manager = FirewallManager(driver, Lifecycle(), deny_unknown=False)
    driver.apply(rules([A, C]))
    driver.apply(rules([A]))
    manager.compact()
    assert driver.is_compact()
    driver.apply(rules([]))

    def broken(rules):
        raise FirewallError("Could not process rule: No such file or directory")

    monkeypatch.setattr(driver, "_compact", broken)
    recorder.reset()
    manager.compact()
    (batch,) = recorder.batches("nft")
    assert batch.startswith(f"table {T} {{}}\ndelete table {T}\n")  # rewritten whole
    assert driver.is_compact()
