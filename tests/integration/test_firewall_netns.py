"""Each PXE filter driver applied for real inside a network namespace the test creates.

The drivers run their commands with `[pxe_filter] root_helper = ip netns exec <ns>`, so
the host's own firewall is never touched. After each step the test reads the kernel's
state back (iptables-save, nft -j, ipset list, the hostsdir) and compares it with what the
RuleSet means; it also sends DHCP-port frames with chosen source MACs through a veth pair
(and, for dnsmasq, DHCPDISCOVERs to a real dnsmasq) to see which ones get through.
Needs root, iproute2, iptables, nftables, ipset and dnsmasq (scripts/test installs them).
"""

import json
import os
import re
import shutil
import subprocess

import pytest

from inspector.errors import ConfigError
from inspector.firewall.drivers import iptables_rules
from inspector.firewall.drivers.dnsmasq import UNKNOWN_HOSTS, DnsmasqDriver
from inspector.firewall.drivers.ipset import IpsetDriver
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.ruleset import RuleSet
from tests.conftest import service_unavailable
from tests.integration.cluster import wait_for
from tests.integration.firewall_lab import Namespace, scratch_namespace

pytestmark = pytest.mark.integration

A, B, C, D, E = (f"52:54:00:00:00:0{i}" for i in range(1, 6))
#: Node A under introspection; B, C known to Ironic; E unknown (discovery).
FIRST = RuleSet.of([A], [B, C], open=True, deny_unknown=False)
#: C goes under introspection, D is enrolled: a patch of three entries.
SECOND = RuleSet.of([A, C], [B, C, D], open=True, deny_unknown=False)
STRICT = RuleSet.of([A, C], [B, C, D], open=True, deny_unknown=True)
#: A non-leader: the lists are known but the port is closed.
FOLLOWER = RuleSet.of([A, C], [B, C, D], open=False, deny_unknown=False)
EVERYONE = [A, B, C, D, E]


def _binary(name: str) -> None:
    if not (shutil.which(name) or os.path.exists(f"/usr/sbin/{name}")):
        service_unavailable(f"{name} is not installed (scripts/test installs it)")


@pytest.fixture
def netns():
    with scratch_namespace() as ns:
        yield ns


# iptables


def iptables_state(ns: Namespace, driver: IptablesDriver) -> dict:
    """Our chains' rules as iptables-save prints them, MACs lower-cased, and INPUT."""
    saved = ns.run(driver.save, "-t", "filter").lower()
    ours = [c for c in re.findall(r"^:(\S+)", saved, re.M) if c.startswith(driver.chain)]
    state: dict = {"input": [], "chains": {c: [] for c in ours}}
    for line in saved.splitlines():
        words = line.split()
        if words[:1] == ["-a"] and words[1] in state["chains"]:
            state["chains"][words[1]].append(" ".join(words[2:]))
        elif words[:2] == ["-a", "input"]:
            state["input"].append(" ".join(words[2:]))
    return state


def reachable(state: dict, main: str = "ironic-inspector") -> dict:
    """What a packet can meet: the main chain up to its first unconditional verdict (a
    whole replacement inserts its verdict in front of the old one, until compact()) and
    the chains that part jumps to, lists sorted."""
    rules = state["chains"][main]
    verdict = rules[: [r in ("-j accept", "-j drop") for r in rules].index(True) + 1]
    jumped = [r.split("-j ")[1] for r in verdict if r.split("-j ")[1] in state["chains"]]
    chains = {main: verdict, **{c: sorted(state["chains"][c]) for c in jumped}}
    return {"input": state["input"], "chains": chains}


def iptables_expected(rules: RuleSet, port: int, slot: str = "") -> dict:
    """What the model means in iptables-save terms (written out here, not by the driver),
    with the list chains of slot "" or "2"."""
    main, wl, bl = "ironic-inspector", f"ironic-inspector-wl{slot}", f"ironic-inspector-bl{slot}"
    chains = {main: ["-j drop"]}
    if rules.open:
        chains = {
            main: [f"-j {wl}", f"-j {bl}", "-j drop" if rules.deny_unknown else "-j accept"],
            wl: [f"-m mac --mac-source {m} -j accept" for m in sorted(rules.whitelist)],
            # A MAC in both lists stays in the blacklist: the whitelist comes first.
            bl: [f"-m mac --mac-source {m} -j drop" for m in sorted(rules.blacklist)],
        }
    return {
        "input": [f"-i pxe0 -p udp -m udp --dport {port} -j {main}", HOST_RULE],
        "chains": chains,
    }


def assert_tidy(state: dict, slot: str = "") -> None:
    """Nothing but the live slot's chains, and nothing under the main chain's verdict."""
    main = "ironic-inspector"
    assert set(state["chains"]) == {main, f"{main}-wl{slot}", f"{main}-bl{slot}"}
    assert reachable(state)["chains"][main] == state["chains"][main]


#: A rule of the host's own that must survive everything the driver does.
HOST_RULE = "-p tcp -m tcp --dport 22 -j accept"


@pytest.mark.parametrize("ip_version", ["4", "6"])
def test_iptables(netns, ip_version, monkeypatch):
    _binary("iptables-restore")
    # The whole replacement below fills its slot with two restores at once, as for a
    # big blacklist.
    monkeypatch.setattr(iptables_rules, "SPLIT_AT", 2)
    driver = IptablesDriver(netns.runner, interface=netns.pxe, ip_version=ip_version)
    tool, port = driver.iptables, driver.port
    netns.run(tool, "-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT")
    driver.check()

    def expect(rules, slot=""):
        assert reachable(iptables_state(netns, driver)) == iptables_expected(rules, port, slot)

    driver.close()
    expect(RuleSet(frozenset(), frozenset(), open=False, deny_unknown=True))
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == set()
    driver.apply(FIRST)
    expect(FIRST)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, D, E}
    driver.apply(SECOND)  # a patch
    expect(SECOND)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, C, E}
    netns.run(tool, "-D", *driver.jump.split())  # somebody removed our jump
    driver.apply(SECOND)
    expect(SECOND)
    driver.apply(STRICT)  # the main chain rewritten: what the close left goes too
    expect(STRICT)
    assert_tidy(iptables_state(netns, driver))
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, C}
    # A restart: the new driver knows nothing and replaces the whole state, deleting
    # nothing: into the other slot, its verdict in front of the old one.
    driver = IptablesDriver(netns.runner, interface=netns.pxe, ip_version=ip_version)
    driver.apply(SECOND)
    expect(SECOND, slot="2")
    assert len(iptables_state(netns, driver)["chains"]) == 5
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, C, E}
    assert driver.compact()
    expect(SECOND, slot="2")
    assert_tidy(iptables_state(netns, driver), slot="2")
    driver.apply(FOLLOWER)
    expect(FOLLOWER)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == set()
    driver.close()
    expect(RuleSet(frozenset(), frozenset(), open=False, deny_unknown=True))
    driver.remove()
    assert iptables_state(netns, driver) == {"input": [HOST_RULE], "chains": {}}


# nftables


def nft_state(ns: Namespace) -> dict | None:
    listing = ns.run("nft", "-j", "list", "ruleset")
    state: dict = {"tables": [], "sets": {}, "chains": {}}
    for item in json.loads(listing)["nftables"]:
        if "table" in item:
            state["tables"].append(f"{item['table']['family']} {item['table']['name']}")
        elif "set" in item and item["set"]["table"] == "ironic-inspector":
            state["sets"][item["set"]["name"]] = sorted(item["set"].get("elem", []))
    if "inet ironic-inspector" in state["tables"]:
        for chain in ("input", "pxe", "overrides", "after_whitelist"):
            text = ns.run("nft", "list", "chain", "inet", "ironic-inspector", chain)
            body = [line.strip() for line in text.splitlines()]
            state["chains"][chain] = body[body.index(f"chain {chain} {{") + 1 : -2]
    return state


def nft_expected(rules: RuleSet, family: str, port: int) -> dict:
    verdict = after_whitelist = ["drop"]
    if rules.open:
        final = "drop" if rules.deny_unknown else "accept"
        verdict = ["jump overrides", "ether saddr @whitelist accept", "goto after_whitelist"]
        after_whitelist = ["ether saddr @blacklist drop", final]
    return {
        "tables": ["inet host", "inet ironic-inspector"],
        "sets": {
            "whitelist": sorted(rules.whitelist),
            "blacklist": sorted(rules.blacklist),
        },
        "chains": {
            "input": [
                "type filter hook input priority filter; policy accept;",
                f'iifname "pxe0" meta nfproto {family} udp dport {port} jump pxe',
            ],
            "pxe": verdict,
            # No whitelist removal in these steps: nothing to override.
            "overrides": [],
            "after_whitelist": after_whitelist,
        },
    }


@pytest.mark.parametrize("ip_version", ["4", "6"])
def test_nftables(netns, ip_version):
    _binary("nft")
    driver = NftablesDriver(netns.runner, interface=netns.pxe, ip_version=ip_version)
    family, port = ("ipv6", 547) if ip_version == "6" else ("ipv4", 67)
    netns.run(
        "nft", "-f", "-", stdin="table inet host {\n chain c {\n  tcp dport 22 accept\n }\n}\n"
    )
    driver.check()
    assert nft_state(netns)["tables"] == ["inet host"]  # check() applied nothing

    def expect(rules):
        assert nft_state(netns) == nft_expected(rules, family, port)

    closed = RuleSet(frozenset(), frozenset(), open=False, deny_unknown=True)
    driver.close()
    expect(closed)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == set()
    driver.apply(FIRST)
    expect(FIRST)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, D, E}
    driver.apply(SECOND)  # a patch
    expect(SECOND)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, C, E}
    netns.run("nft", "flush", "chain", "inet", "ironic-inspector", "input")  # hook lost
    driver.apply(SECOND)
    expect(SECOND)
    netns.run("nft", "delete", "table", "inet", "ironic-inspector")  # table lost
    driver.apply(STRICT)
    expect(STRICT)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == {A, C}
    driver.apply(FOLLOWER)
    expect(FOLLOWER)
    driver.close()
    expect(closed)
    if ip_version == "4":
        assert netns.delivered(EVERYONE) == set()
    driver.remove()
    assert nft_state(netns)["tables"] == ["inet host"]
    assert "tcp dport 22 accept" in netns.run("nft", "list", "table", "inet", "host")


# ipset


def _ipset_works(ns: Namespace) -> bool:
    """Our own look at the kernel: a hash:mac set, and iptables matching on it."""
    made = ns.runner.run(["ipset", "create", "probe-own", "hash:mac"], check=False)
    if made.returncode != 0:
        return False
    try:
        batch = (
            "*filter\n:probe-own - [0:0]\n-A probe-own -m set --match-set probe-own src\nCOMMIT\n"
        )
        tested = ns.runner.run(
            ["iptables-restore", "--noflush", "--test"], stdin=batch, check=False
        )
        return tested.returncode == 0
    finally:
        ns.run("ipset", "destroy", "probe-own")


def ipset_members(ns: Namespace, name: str) -> list[str]:
    listing = ns.run("ipset", "list", name)
    return sorted(line.strip().lower() for line in listing.split("Members:\n")[1].splitlines())


def test_ipset_works_fully_or_check_says_why(netns):
    _binary("ipset")
    _binary("iptables-restore")
    driver = IpsetDriver(netns.runner, interface=netns.pxe)
    if not _ipset_works(netns):
        # This kernel lacks hash:mac or the set match: check() must say so, clearly.
        with pytest.raises(ConfigError) as caught:
            driver.check()
        assert caught.value.message.startswith("ipset driver unavailable: ")
        assert caught.value.message.endswith("use the nftables or iptables driver")
        assert "ironic-inspector-probe" not in netns.run("ipset", "list", "-n")
        return
    driver.check()
    driver.close()
    assert netns.delivered(EVERYONE) == set()
    for rules in (FIRST, SECOND, STRICT):
        driver.apply(rules)
        assert ipset_members(netns, "ironic-inspector-wl") == sorted(rules.whitelist)
        assert ipset_members(netns, "ironic-inspector-bl") == sorted(rules.blacklist)
        unknown = set(EVERYONE) - rules.whitelist - rules.blacklist
        assert netns.delivered(EVERYONE) == rules.whitelist | (
            set() if rules.deny_unknown else unknown
        )
    driver.close()
    assert netns.delivered(EVERYONE) == set()
    driver.remove()
    assert "ironic-inspector" not in netns.run("ipset", "list", "-n")
    assert "ironic-inspector" not in netns.run("iptables-save", "-t", "filter")


# dnsmasq


def test_dnsmasq(netns, tmp_path):
    _binary("dnsmasq")
    hostsdir, pidfile, log = tmp_path / "hostsdir", tmp_path / "dnsmasq.pid", tmp_path / "log"
    start = (
        *("dnsmasq", "--conf-file=/dev/null", "--port=0", "--user=root", "--group=root"),
        *(f"--interface={netns.pxe}", "--bind-interfaces", "--no-ping"),
        *("--dhcp-range=10.250.0.50,10.250.0.99,1h", "--dhcp-ignore=tag:!known"),
        *(f"--dhcp-hostsdir={hostsdir}", f"--pid-file={pidfile}"),
        *(f"--dhcp-leasefile={tmp_path / 'leases'}", f"--log-facility={log}", "--log-dhcp"),
    )
    # Stops the dnsmasq this test started, by its pid, and waits for it to be gone.
    stop = (
        "sh",
        "-c",
        f'[ ! -e {pidfile} ] || {{ p=$(cat {pidfile}); kill "$p"; '
        f'while kill -0 "$p" 2>/dev/null; do sleep 0.02; done; rm -f {pidfile}; }}',
    )
    driver = DnsmasqDriver(
        netns.runner, hostsdir=str(hostsdir), start_command=start, stop_command=stop
    )
    driver.check()

    def files():
        return {p.name: p.read_text() for p in hostsdir.iterdir()}

    def reads(name):
        return log.read_text().count(f"read {hostsdir}/{name}\n") if log.exists() else 0

    try:
        driver.close()
        assert files() == {}  # closed, dnsmasq stopped, hostsdir purged
        assert not pidfile.exists()
        driver.apply(FIRST)
        assert files() == {
            UNKNOWN_HOSTS: "*:*:*:*:*:*\n",
            A: f"{A}\n",
            B: f"{B},ignore\n",
            C: f"{C},ignore\n",
        }
        assert pidfile.exists()
        wait_for(lambda: reads(A) >= 1, timeout=5, message="dnsmasq reading the hostsdir")
        assert netns.offered([B, C, D, E, A]) == {D, E, A}
        driver.apply(SECOND)
        assert files()[C] == f"{C}\n"
        assert files()[D] == f"{D},ignore\n"
        wait_for(lambda: reads(D) >= 1, timeout=5, message="dnsmasq reading D's new file")
        assert netns.offered([B, D, E, C, A]) == {E, C, A}
        driver.apply(STRICT)
        wait_for(lambda: reads(UNKNOWN_HOSTS) >= 2, timeout=5, message="the wildcard re-read")
        assert netns.offered([B, D, E, C, A]) == {C, A}
        driver.close()
        assert not pidfile.exists()  # stopped by the stop command
        assert files() == {}  # then purged: no dnsmasq holds their records any more
        driver.remove()
        assert files() == {}
    finally:
        subprocess.run(stop, check=False)
