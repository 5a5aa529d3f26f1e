"""The iptables driver's whole replacements that delete nothing (the two slots of list
chains), its close, and a model of the kernel: every batch applied as one transaction
or not at all, each packet walked through INPUT and our chains, checked against what
the RuleSet means after random applies, closes, restarts, failures and compactions.
"""

import dataclasses
import random
import re
import subprocess
import threading

import pytest

from inspector.errors import FirewallError
from inspector.firewall.drivers import base, iptables_rules
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.ruleset import CLOSED, RuleSet
from tests.unit.test_firewall_drivers import CASES, GOLDEN, Recorder, golden

A, B, C, D = (f"52:54:00:00:00:0{i}" for i in range(1, 5))
MAIN, WL, BL, WL2, BL2 = (f"ironic-inspector{s}" for s in ("", "-wl", "-bl", "-wl2", "-bl2"))
JUMP = "-i pxe0 -p udp --dport 67 -j ironic-inspector"


def test_render_switch_matches_golden(monkeypatch):
    driver = IptablesDriver(interface="pxe0")
    text = driver.render_switch(CASES["open-lists"], 1)
    text += driver.render_switch(CASES["closed-with-lists"], 0)
    monkeypatch.setattr(iptables_rules, "SPLIT_AT", 2)  # a big blacklist: filled by two
    text += "# split\n" + driver.render_switch(CASES["deny-unknown"], 1)
    golden(GOLDEN / "iptables" / "switch.txt", text)


@pytest.mark.parametrize("slot", [0, 1])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_verdict_ends_in_accept_or_drop(case, slot):
    # What makes an inserted verdict hide the old one whole.
    driver = IptablesDriver(interface="pxe0")
    expiring = dataclasses.replace(CASES[case], open_until=1_700_000_000.0)
    for rules in (CASES[case], expiring):
        inserted = re.findall(rf"^-I {MAIN} 1 (.*)", driver.render_switch(rules, slot), re.M)
        assert inserted[0] in ("-j ACCEPT", "-j DROP")  # inserted first: the last one


def test_a_replacement_onto_a_live_rule_set_deletes_nothing(monkeypatch):
    monkeypatch.setattr(base, "PATCH_LIMIT", 1)
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(RuleSet.of([A], [B], open=True, deny_unknown=False))
    # Unknown state, jump in place: a batch creates the first slot's chains (absent).
    create, _ = recorder.batches("iptables-restore")
    assert create == f"*filter\n-N {WL}\n-N {BL}\nCOMMIT\n"
    assert (driver.slot, driver.leftovers) == (0, True)
    recorder.reset()
    second = RuleSet.of([C], [D], open=True, deny_unknown=False)
    driver.apply(second)  # too big for a patch: into the other slot
    create, batch = recorder.batches("iptables-restore")
    assert create == f"*filter\n-N {WL2}\n-N {BL2}\nCOMMIT\n"
    assert batch == driver.render_switch(second, 1)
    assert not re.search(r"^(-D|-X|-F|:)", batch, re.M)
    assert (driver.slot, driver.whitelist_chain, driver.blacklist_chain) == (1, WL2, BL2)
    recorder.reset()
    assert driver.compact()  # off the hot path: the old slot and the old verdict go
    assert recorder.batches("iptables-restore") == [
        "*filter\n"
        f":{MAIN} - [0:0]\n-A {MAIN} -j {WL2}\n-A {MAIN} -j {BL2}\n-A {MAIN} -j ACCEPT\n"
        f":{WL} - [0:0]\n:{BL} - [0:0]\n-X {WL}\n-X {BL}\n"
        "COMMIT\n"
    ]
    assert driver.is_compact() and not driver.compact()


def test_a_big_blacklist_is_filled_by_two_restores_before_the_switch(monkeypatch):
    monkeypatch.setattr(iptables_rules, "SPLIT_AT", 2)
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    rules = RuleSet.of([A], [B, C, D], open=True, deny_unknown=False)
    driver.apply(rules)
    _, *fill, switch = recorder.batches("iptables-restore")  # after the -N batch
    *parts, verdict = [
        b + "COMMIT\n" for b in driver.render_switch(rules, 0).split("COMMIT\n")[:-1]
    ]
    assert len(fill) == 2 and sorted(fill) == sorted(parts)  # in whichever order they ran
    assert (
        switch
        == verdict
        == f"*filter\n-I {MAIN} 1 -j ACCEPT\n-I {MAIN} 1 -j {BL}\n-I {MAIN} 1 -j {WL}\nCOMMIT\n"
    )
    assert "-I" not in "".join(fill)  # nothing a packet meets until the switch


def test_legacy_rewrites_the_live_slot_whole():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0", backend="legacy")
    driver.apply(RuleSet.of([A], [B], open=True, deny_unknown=False))
    (batch,) = recorder.batches("iptables-legacy-restore")
    assert batch.startswith(f"*filter\n:{MAIN} - [0:0]\n:{WL} - [0:0]\n:{BL} - [0:0]\n")


class Probing(Recorder):
    """A Recorder whose `-N` probe batches fail for the chains in `existing`."""

    def __init__(self, existing):
        super().__init__()
        self.existing = set(existing)

    def run(self, argv, *, stdin=None, check=True):
        names = set(re.findall(r"^-N (\S+)", stdin or "", re.M))
        if names & self.existing:
            self.calls.append((tuple(argv), stdin))
            if check:
                raise FirewallError("iptables-restore: line 2 failed: Chain already exists.")
            return subprocess.CompletedProcess(argv, 1, stdout="", stderr="exists")
        return super().run(argv, stdin=stdin, check=check)


def test_an_unknown_state_takes_the_free_slot_or_is_rewritten_whole():
    recorder = Probing([WL, BL])  # slot 0 live
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.apply(RuleSet.of([A], [B], open=True, deny_unknown=False))
    batches = recorder.batches("iptables-restore")
    assert [b.splitlines()[1] for b in batches] == [
        f"-N {WL}",
        f"-N {WL2}",
        f"-A {WL2} -m mac --mac-source {A} -j ACCEPT",
    ]
    assert driver.slot == 1

    recorder = Probing([WL, BL, WL2, BL2])  # both: a replacement not yet compacted
    driver = IptablesDriver(recorder, interface="pxe0")
    rules = RuleSet.of([A], [B], open=True, deny_unknown=False)
    driver.apply(rules)
    *probes, whole = recorder.batches("iptables-restore")
    assert len(probes) == 2
    assert whole == driver.render(rules).replace(f"# INPUT jump: INPUT {JUMP}\n", "")
    assert (driver.slot, driver.leftovers) == (0, True)


def test_close_inserts_a_drop_and_the_next_apply_writes_the_whole_state():
    recorder = Recorder()
    driver = IptablesDriver(recorder, interface="pxe0")
    driver.close()
    assert recorder.batches("iptables-restore") == [f"*filter\n-I {MAIN} 1 -j DROP\nCOMMIT\n"]
    recorder.reset()
    recorder.jump_present = False  # nothing of ours yet (or somebody flushed INPUT)
    driver.close()
    assert recorder.batches("iptables-restore") == [
        f"*filter\n:{MAIN} - [0:0]\n-A {MAIN} -j DROP\n-I INPUT {JUMP}\nCOMMIT\n"
    ]
    recorder.jump_present = True
    recorder.reset()
    driver.apply(RuleSet.of([A], [B], open=True, deny_unknown=False))
    assert len(recorder.batches("iptables-restore")) == 2  # probe, whole replacement


# A model of the kernel.


@dataclasses.dataclass
class Kernel:
    """The filter table as far as our batches and the INPUT jump go."""

    chains: dict[str, list[str]] = dataclasses.field(default_factory=lambda: {"INPUT": []})

    def restore(self, text: str) -> bool:
        """Apply a batch whole, or (returning False) not at all."""
        chains = {name: list(rules) for name, rules in self.chains.items()}
        for line in text.splitlines()[1:-1]:
            op, name, *rest = line.split(" ", 2) if line[0] == "-" else (":", line[1:].split()[0])
            spec = rest[0] if rest else ""
            if op == ":":
                chains[name] = []
            elif (op == "-N" and name in chains) or (op != "-N" and name not in chains):
                return False
            elif op == "-N":
                chains[name] = []
            elif op == "-X":
                if chains.pop(name) or any(
                    r.endswith(f"-j {name}") for c in chains.values() for r in c
                ):
                    return False
            elif op == "-A":
                chains[name].append(spec)
            elif op == "-I":
                chains[name].insert(0, spec.removeprefix("1 "))
            elif op == "-D":
                if spec not in chains[name]:
                    return False
                chains[name].remove(spec)
        targets = {r.split("-j ")[1] for rules in chains.values() for r in rules}
        if not targets <= {*chains, "ACCEPT", "DROP", "RETURN"}:
            return False
        self.chains = chains
        return True

    def verdict(self, mac: str, chain: str = "INPUT") -> str | None:
        """ACCEPT or DROP for a DHCP packet from `mac`; None: fell off `chain`."""
        for rule in self.chains[chain]:
            source = re.search(r"--mac-source (\S+)", rule)
            if (source and source[1] != mac) or rule.startswith("-p tcp"):
                continue
            target = rule.split("-j ")[1]
            if target == "RETURN":
                return None
            result = target if target in ("ACCEPT", "DROP") else self.verdict(mac, target)
            if result is not None:
                return result
        return "ACCEPT" if chain == "INPUT" else None


@dataclasses.dataclass
class KernelRunner:
    """Runs the driver's commands against a Kernel; `failures` batches fail outright."""

    kernel: Kernel
    failures: int = 0
    prefix: tuple = ()
    timeout: float = 1.0
    #: One transaction at a time, as the kernel's commit mutex (two restores at once:
    #: the later one is retried by iptables-nft-restore on the new generation).
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    #: The MACs whose verdicts are looked at after each batch, and those verdicts.
    macs: list[str] = dataclasses.field(default_factory=list)
    seen: list[dict] = dataclasses.field(default_factory=list)

    def run(self, argv, *, stdin=None, check=True):
        with self.lock:
            return self._run(argv, stdin, check)

    def _run(self, argv, stdin, check):
        code = 0
        if "-C" in argv:
            code = 0 if JUMP in self.kernel.chains["INPUT"] else 1
        elif stdin is not None and self.failures:
            self.failures, code = self.failures - 1, 4
        elif stdin is not None:
            code = 0 if self.kernel.restore(stdin) else 1
            self.seen.append({mac: self.kernel.verdict(mac) for mac in self.macs})
        if check and code:
            raise FirewallError(f"{argv[0]} failed")
        return subprocess.CompletedProcess(argv, code, stdout="", stderr="")


def expected(rules: RuleSet, mac: str) -> str:
    if not rules.open or mac in rules.blacklist - rules.whitelist:
        return "DROP"
    if mac in rules.whitelist or not rules.deny_unknown:
        return "ACCEPT"
    return "DROP"


@pytest.mark.parametrize("seed", range(30))
def test_random_replacements_closes_and_failures_keep_the_verdicts(seed, monkeypatch):
    monkeypatch.setattr(base, "PATCH_LIMIT", 2)
    monkeypatch.setattr(iptables_rules, "SPLIT_AT", 3)  # some fills in two restores
    rng = random.Random(seed)
    macs = [f"52:54:00:00:02:{i:02x}" for i in range(6)]
    kernel = Kernel(chains={"INPUT": ["-p tcp --dport 22 -j ACCEPT"]})
    runner = KernelRunner(kernel, macs=macs)
    driver = IptablesDriver(runner, interface="pxe0")
    now, unhooked = CLOSED, False
    driver.close()
    for _ in range(60):
        before = {m: kernel.verdict(m) for m in macs}
        runner.seen.clear()
        step = rng.choice(["apply"] * 5 + ["close", "compact", "restart", "fail", "unhook"])
        if step == "restart":
            driver = IptablesDriver(runner, interface="pxe0")
        elif step == "fail":
            runner.failures = rng.choice([1, 2])
        elif step == "unhook":  # somebody flushed INPUT: nothing filtered until repaired
            kernel.chains["INPUT"] = [r for r in kernel.chains["INPUT"] if r != JUMP]
            unhooked = True
        try:
            if step == "close":
                driver.close()
                now, unhooked = CLOSED, False
            elif step == "compact":
                driver.compact()
            elif step == "apply":
                desired = RuleSet.of(
                    [m for m in macs if rng.random() < 0.3],
                    [m for m in macs if rng.random() < 0.6],
                    open=rng.random() < 0.7,
                    deny_unknown=rng.random() < 0.3,
                )
                driver.apply(desired)
                now, unhooked = desired, False
        except FirewallError:
            runner.failures = 0
            driver.close()  # as the manager does: errors close
            now, unhooked = CLOSED, False
        verdicts = {m: "ACCEPT" if unhooked else expected(now, m) for m in macs}
        assert {m: kernel.verdict(m) for m in macs} == verdicts
        # Between batches a packet met the old rules, the new ones, or a closed port.
        closed = dict.fromkeys(macs, "DROP")
        assert all(seen in (before, verdicts, closed) for seen in runner.seen), step
        known = driver.slot is not None and not driver.leftovers and driver.is_compact()
        if step == "compact" and known and now is not CLOSED and not unhooked:
            live = {MAIN, driver.whitelist_chain, driver.blacklist_chain, "INPUT"}
            assert set(kernel.chains) == live
            assert kernel.chains[MAIN] == [r.split(" ", 2)[2] for r in driver._verdict(now)]
