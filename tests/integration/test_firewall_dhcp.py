"""A real DHCP exchange through the HA PXE firewall: three inspector hosts (network
namespaces on one bridge, each with a dnsmasq and an `inspector worker` whose firewall
commands run in that namespace), real PostgreSQL, Redis, RabbitMQ and Ironic, and a
bare-metal node namespace running dhclient with a chosen MAC.

A node under introspection gets a lease, only from the firewall leader; a node Ironic
knows and that is not under introspection gets none; an unknown node gets one, or none
with deny_unknown_macs; `inspector status` shows it all; SIGTERM closes every host.
"""

import signal

import pytest

from tests.integration.cluster import running_deployment, start, wait_for
from tests.integration.firewall_lab import Lab, is_filtered, is_open, listed, start_worker

pytestmark = pytest.mark.integration

DRIVER = "nftables"
#: The whitelist comes from the channel alone (the workers' announcements), the
#: blacklist from polling Ironic alone (this Ironic sends no notifications).
OPTIONS = {
    "firewall": {"whitelist_sync_period": 0, "blacklist_sync_period": 1},
    "coordination": {"lease_timeout": 3, "election_interval": 0.5},
}


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path).up()
    yield lab
    lab.down()


def open_hosts(lab):
    return [host for host in lab.hosts if is_open(host, DRIVER)]


def the_leader(lab, timeout=20):
    """The one open host, once every host filters and exactly one is open."""
    hosts = wait_for(
        lambda: (
            all(is_filtered(host, DRIVER) for host in lab.hosts)
            and (found := open_hosts(lab))
            and len(found) == 1
            and found
        ),
        timeout,
        message="exactly one host with an open PXE service",
    )
    return hosts[0]


def test_dhcp_only_from_the_leader_for_introspected_and_unknown_nodes(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    introspected = ironic_api.enroll(macs=1)
    known = ironic_api.enroll(macs=1, manage=False)
    mac_in = ironic_api.node_ports(introspected["uuid"])[0]["address"]
    mac_known = ironic_api.node_ports(known["uuid"])[0]["address"]
    mac_unknown = ironic_api.new_mac()
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=1,
        workers=0,
        options=OPTIONS,
    ) as cluster:
        for host in lab.hosts:
            start_worker(cluster, host, DRIVER)
        leader = the_leader(lab)
        followers = [host for host in lab.hosts if host is not leader]
        for host in lab.hosts:  # every host keeps the blacklist, open or not
            wait_for(
                lambda host=host: mac_known in listed(host, DRIVER, "blacklist"),
                10,
                message=f"{mac_known} blacklisted on {host.namespace}",
            )
        start(cluster, introspected["uuid"])
        wait_for(
            lambda: mac_in in listed(leader, DRIVER, "whitelist"),
            5,
            message="the introspected MAC whitelisted through the channel",
        )
        assert open_hosts(lab) == [leader]

        lease = lab.lease(mac_in)
        assert lease is not None, "the node under introspection got no lease"
        assert lease["server"] == leader.address
        assert not any(host.heard(mac_in) for host in followers)

        assert lab.lease(mac_known) is None, "a blacklisted node got a lease"
        assert not any(host.heard(mac_known) for host in lab.hosts)

        lease = lab.lease(mac_unknown)
        assert lease is not None, "an unknown node was not answered (discovery)"
        assert lease["server"] == leader.address

        status = cluster.run("status", "--wait", "2")
        assert status.returncode == 0, status.stderr
        lines = status.stdout.splitlines()
        assert lines[0].startswith("Firewall leader: host")
        rows = {line.split()[0]: line.split() for line in lines[2:] if line.startswith("host")}
        index = leader.index
        assert rows[f"host{index}"][3:5] == ["open", "leader"]
        assert rows[f"host{index}"][7] == "1"  # the whitelist: the introspected node
        for host in followers:
            assert rows[f"host{host.index}"][3:5] == ["closed", "follower"]

        # SIGTERM closes every host; then the same hosts with deny_unknown_macs, the
        # whitelist polled from the store this time (nobody heard the announcement).
        for worker in cluster.workers:
            worker.popen.send_signal(signal.SIGTERM)
        wait_for(lambda: not open_hosts(lab), 5, message="every host closed after SIGTERM")
        assert [worker.popen.wait(30) for worker in cluster.workers] == [0, 0, 0]
        assert open_hosts(lab) == []
        strict = {
            "pxe_filter": {"deny_unknown_macs": True},
            "firewall": {"whitelist_sync_period": 1},
        }
        for host in lab.hosts:
            start_worker(cluster, host, DRIVER, strict)
        leader = the_leader(lab)
        wait_for(
            lambda: mac_in in listed(leader, DRIVER, "whitelist"),
            10,
            message="the introspected MAC whitelisted from the store",
        )
        assert lab.lease(mac_unknown) is None, "an unknown node got a lease despite deny"
        lease = lab.lease(mac_in)
        assert lease is not None and lease["server"] == leader.address
