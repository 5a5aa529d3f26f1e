"""The dnsmasq driver writes the hostsdir as Ironic 39's ironic-pxe-filter does, so that an
operator can stop one and start the other on the same dnsmasq configuration, either way.

Ironic's own module (ironic.pxe_filter.dnsmasq, run by the Python of the Ironic that
scripts/services installs) and our driver write the same states, each into its own
directory and into the other's: the files, their names and their contents are the same.
"""

import json
import pathlib
import subprocess

import pytest

from inspector.firewall.drivers.dnsmasq import DnsmasqDriver
from inspector.firewall.ruleset import RuleSet
from tests.conftest import service_unavailable
from tests.integration.ironic_lab import IRONIC_VENV

pytestmark = pytest.mark.integration

#: Runs ironic-pxe-filter's sync(allow, deny, allow_unknown) on a hostsdir, as its
#: service does after reading Ironic's database.
IRONIC_SYNC = """
import json, sys
from ironic.conf import CONF
from ironic.pxe_filter import dnsmasq
hostsdir, allow, deny, allow_unknown = sys.argv[1], *map(json.loads, sys.argv[2:])
CONF([], project="ironic", default_config_files=[])
CONF.set_override("dhcp_hostsdir", hostsdir, group="pxe_filter")
dnsmasq.sync(allow, deny, allow_unknown)
"""

INSPECTED = ["52:54:00:00:00:01", "52:54:00:00:00:02"]
OTHERS = ["52:54:00:00:00:0a", "52:54:00:00:00:0b"]


def ironic_sync(hostsdir: pathlib.Path, allow, deny, allow_unknown: bool) -> None:
    python = IRONIC_VENV / "python"
    if not python.exists():
        service_unavailable(f"{python} missing: scripts/services start ironic")
    subprocess.run(
        [
            str(python),
            "-c",
            IRONIC_SYNC,
            str(hostsdir),
            *map(json.dumps, (allow, deny, allow_unknown)),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )


def ours(hostsdir: pathlib.Path, allow, deny, allow_unknown: bool) -> None:
    """Our leader's apply of the same state: Ironic's ports (all blacklisted, the inspected
    ones whitelisted too), unknown MACs as ironic-pxe-filter decides."""
    driver = DnsmasqDriver(hostsdir=str(hostsdir), purge=False)
    driver.apply(RuleSet.of(allow, [*allow, *deny], open=True, deny_unknown=not allow_unknown))


def files(hostsdir: pathlib.Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(hostsdir.iterdir())}


# Each state after the first, applied over the previous one: the last drops a port
# (its MAC no longer in Ironic), whose file stays and follows the unknown MACs.
STATES = [
    (INSPECTED, OTHERS, True),
    ([], [*INSPECTED, *OTHERS], False),
    (INSPECTED[:1], [INSPECTED[1], *OTHERS[:1]], True),
    ([], [INSPECTED[1], *OTHERS[:1]], False),
]


def test_both_write_the_same_hostsdir_state_after_state(tmp_path):
    theirs, mine = tmp_path / "ironic", tmp_path / "inspector"
    theirs.mkdir()
    mine.mkdir()
    for allow, deny, allow_unknown in STATES:
        ironic_sync(theirs, allow, deny, allow_unknown)
        ours(mine, allow, deny, allow_unknown)
        assert files(mine) == files(theirs)
    assert files(mine)["unknown_hosts_filter"] == "*:*:*:*:*:*,ignore\n"
    assert files(mine)[OTHERS[1]] == f"{OTHERS[1]},ignore\n"  # a port gone from Ironic


@pytest.mark.parametrize("first", ["ironic-pxe-filter", "inspector pxe-filter"])
def test_either_takes_over_the_others_hostsdir(tmp_path, first):
    hostsdir, expected = tmp_path / "hostsdir", tmp_path / "expected"
    hostsdir.mkdir()
    expected.mkdir()
    writers = [ironic_sync, ours] if first == "ironic-pxe-filter" else [ours, ironic_sync]
    # The first ran for a while; the second takes over in another state.
    for allow, deny, allow_unknown in STATES[:2]:
        writers[0](hostsdir, allow, deny, allow_unknown)
    allow, deny, allow_unknown = STATES[2]
    writers[1](hostsdir, allow, deny, allow_unknown)
    for state in STATES[:3]:
        ironic_sync(expected, *state)
    assert files(hostsdir) == files(expected)
