"""A MAC taken out of the whitelist by an override (no deletion on the hot path) really is
out, on real netfilter in a network namespace: its frames no longer reach the DHCP port
and dnsmasq never answers its DHCPDISCOVER; a readmitted MAC gets through again; and
compaction (which deletes) leaves the same verdicts with the overrides gone.
Needs root, iproute2, iptables, nftables and dnsmasq (scripts/test installs them).
"""

import pathlib
import re
import subprocess

import pytest

from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.ruleset import RuleSet
from tests.integration import test_firewall_netns
from tests.integration.test_firewall_netns import Namespace, _binary

#: The scratch namespace with its veth pair (the fixture of test_firewall_netns).
netns = test_firewall_netns.netns

pytestmark = pytest.mark.integration

A, B, C, D, E = (f"52:54:00:00:00:1{i}" for i in range(1, 6))
EVERYONE = [A, B, C, D, E]
#: Ironic knows B, C and D (the blacklist); A and B are under introspection; E is unknown.
BLACKLIST = [B, C, D]


def open_rules(whitelist, *, deny_unknown=False):
    return RuleSet.of(whitelist, BLACKLIST, open=True, deny_unknown=deny_unknown)


def make(name: str, ns: Namespace):
    kind = {"iptables": IptablesDriver, "nftables": NftablesDriver}[name]
    _binary("iptables-restore" if name == "iptables" else "nft")
    return kind(ns.runner, interface=ns.pxe)


def kernel_whitelist(ns: Namespace, name: str) -> tuple[set[str], int]:
    """(the base whitelist: set elements or ACCEPT rules, the number of overrides)."""
    if name == "nftables":
        listing = ns.run("nft", "list", "table", "inet", "ironic-inspector")
        base = listing.split("set whitelist {", 1)[1].split("}", 1)[0]
        overrides = listing.split("chain overrides {", 1)[1].split("}", 1)[0]
        return set(re.findall(r"52(?::[0-9a-f]{2}){5}", base)), overrides.count("ether saddr")
    saved = ns.run("iptables-save", "-t", "filter").lower()
    rules = [line for line in saved.splitlines() if line.startswith("-a ironic-inspector-wl ")]
    returns = sum(1 for line in rules if line.endswith("-j return"))
    accepts = [line.split("--mac-source ")[1].split()[0] for line in rules]
    # Overrides are inserted at the head: a MAC accepted twice is one base rule and one
    # readmission.
    return set(accepts) - {""}, returns + len(accepts) - len(set(accepts))


@pytest.mark.parametrize("name", ["iptables", "nftables"])
def test_a_revoked_mac_does_not_pass_and_compaction_keeps_it_so(netns, name):
    driver = make(name, netns)
    driver.check()
    driver.apply(open_rules([A, B]))
    assert netns.delivered(EVERYONE) == {A, B, E}
    driver.apply(open_rules([A]))  # B's introspection ends: back to the blacklist
    assert driver.overrides == 1
    assert B in kernel_whitelist(netns, name)[0]  # no deletion: the override does it
    assert netns.delivered(EVERYONE) == {A, E}
    driver.apply(open_rules([]))  # A ends too: unknown to Ironic, so discovery answers it
    assert netns.delivered(EVERYONE) == {A, E}
    driver.apply(open_rules([B]))  # B introspected again: readmitted
    assert driver.overrides == 3
    assert netns.delivered(EVERYONE) == {A, B, E}
    driver.apply(open_rules([A]))  # B revoked again, A readmitted
    assert driver.overrides == 5
    assert netns.delivered(EVERYONE) == {A, E}
    assert driver.compact()
    assert driver.overrides == 0
    assert kernel_whitelist(netns, name) == ({A}, 0)
    assert netns.delivered(EVERYONE) == {A, E}
    driver.apply(open_rules([A], deny_unknown=True))
    assert netns.delivered(EVERYONE) == {A}
    driver.apply(open_rules([A, B], deny_unknown=True))
    assert netns.delivered(EVERYONE) == {A, B}
    driver.remove()


@pytest.fixture
def dnsmasq(netns, tmp_path):
    """dnsmasq on the PXE interface answering every DHCPDISCOVER (the firewall decides)."""
    _binary("dnsmasq")
    pidfile = tmp_path / "dnsmasq.pid"
    subprocess.run(
        [
            *("ip", "netns", "exec", netns.name, "dnsmasq", "--conf-file=/dev/null"),
            *("--port=0", "--user=root", "--group=root", f"--interface={netns.pxe}"),
            *("--bind-interfaces", "--no-ping", "--dhcp-range=10.250.0.50,10.250.0.99,1h"),
            f"--pid-file={pidfile}",
            f"--dhcp-leasefile={tmp_path / 'leases'}",
        ],
        check=True,
    )
    try:
        yield
    finally:
        pid = int(pathlib.Path(pidfile).read_text())
        subprocess.run(["kill", str(pid)], check=False)


@pytest.mark.parametrize("name", ["iptables", "nftables"])
def test_a_revoked_mac_gets_no_dhcp_offer(netns, dnsmasq, name):
    driver = make(name, netns)
    driver.apply(open_rules([A, B], deny_unknown=True))
    # The last MAC must be answered: it marks the end of what dnsmasq sent.
    assert netns.offered([C, E, B, A]) == {B, A}
    driver.apply(open_rules([A], deny_unknown=True))  # B revoked by an override
    assert driver.overrides == 1
    assert netns.offered([B, C, E, A]) == {A}
    driver.apply(open_rules([A, B], deny_unknown=True))  # readmitted by an override
    assert netns.offered([C, E, B, A]) == {B, A}
    driver.apply(open_rules([A], deny_unknown=True))
    driver.compact()
    assert netns.offered([B, C, E, A]) == {A}
    driver.remove()
