"""What closes the rules of a leader that died without closing them: the kernel itself
at RuleSet.open_until (nftables, iptables), `inspector firewall close` run by the
supervisor (dnsmasq, whose hostsdir cannot expire).

The kernel tests apply one open rule set and never touch it again: frames from an
unknown MAC get through until the deadline and are dropped after it, in a namespace
the test creates (the fixture and probe of test_firewall_netns).
"""

import math
import subprocess
import time

import pytest

from inspector.firewall.drivers.dnsmasq import UNKNOWN_HOSTS, DnsmasqDriver
from inspector.firewall.drivers.iptables import IptablesDriver
from inspector.firewall.drivers.nftables import NftablesDriver
from inspector.firewall.ruleset import RuleSet
from tests.integration.cluster import INSPECTOR, ROOT, render_config, wait_for
from tests.integration.test_firewall_netns import A, B, E, netns  # noqa: F401 - fixture

pytestmark = pytest.mark.integration

#: Seconds the rules stay open after they were applied.
OPEN_FOR = 1.5


@pytest.mark.parametrize(
    ("driver_class", "onto_open"),
    [(NftablesDriver, False), (IptablesDriver, False), (IptablesDriver, True)],
)
def test_the_kernel_closes_expired_rules_by_itself(netns, driver_class, onto_open):  # noqa: F811
    if onto_open:
        # A restart onto a port open without a deadline: iptables puts the new rule set
        # into the other slot, its verdict in front of the old one, which stays there
        # until compact(); expired, the new verdict still ends in DROP.
        old = RuleSet.of([A], [B], open=True, deny_unknown=False)
        driver_class(netns.runner, interface=netns.pxe).apply(old)
    driver = driver_class(netns.runner, interface=netns.pxe)
    driver.check()
    until = time.time() + OPEN_FOR
    driver.apply(RuleSet.of([A], [B], open=True, deny_unknown=False, open_until=until))
    assert netns.delivered([A, B, E]) == {A, E}
    closed = wait_for(
        lambda: not netns.delivered([A, E]) and time.time(),
        OPEN_FOR + 5,
        0.05,
        "the kernel closing the port at open_until",
    )
    # Closed by the deadline, at its whole second (each probe takes a fraction of one).
    assert math.floor(until) - 0.5 <= closed <= until + 0.5
    assert netns.delivered([A, B, E]) == set()
    driver.remove()


def test_inspector_firewall_close_closes_a_dead_leaders_hostsdir(tmp_path):
    hostsdir = tmp_path / "hostsdir"
    hostsdir.mkdir()
    # What a leader left behind when it was killed: A answered, unknown MACs too.
    DnsmasqDriver(hostsdir=str(hostsdir), purge=False).apply(
        RuleSet.of([A], [B], open=True, deny_unknown=False)
    )
    assert (hostsdir / A).read_text() == f"{A}\n"
    config = tmp_path / "inspector.conf"
    config.write_text(
        render_config(
            {
                "pxe_filter": {"driver": "dnsmasq"},
                "dnsmasq_pxe_filter": {"dhcp_hostsdir": hostsdir, "purge_dhcp_hostsdir": False},
            }
        )
    )
    result = subprocess.run(
        [*INSPECTOR, "firewall", "close", "--config-file", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "PXE service closed (dnsmasq driver)\n"
    files = {path.name: path.read_text() for path in hostsdir.iterdir()}
    assert files == {
        UNKNOWN_HOSTS: "*:*:*:*:*:*,ignore\n",
        A: f"{A},ignore\n",
        B: f"{B},ignore\n",
    }
