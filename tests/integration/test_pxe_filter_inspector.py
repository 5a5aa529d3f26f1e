"""`inspector pxe-filter` with [pxe_filter] whitelist_source = inspector: the firewall of our
own introspections on PXE hosts that run no worker. A deployment (API, one worker with
the noop driver; PostgreSQL, RabbitMQ, Redis, the test Ironic) and three lab hosts
(tests/integration/firewall_lab.py), each with a dnsmasq and an `inspector pxe-filter`
(nftables): an introspection started through our API is answered by exactly one host,
which the workers' announcements reach; `inspector status` shows the filters.
"""

import pytest

from tests.integration.cluster import INSPECTOR, render_config, running_deployment, start, wait_for
from tests.integration.firewall_lab import Lab, is_filtered, is_open, listed, worker_options

pytestmark = pytest.mark.integration

DRIVER = "nftables"
OPTIONS = {
    # The whitelist from the workers' announcements alone: the channel must carry it.
    "firewall": {"whitelist_sync_period": 0, "blacklist_sync_period": 1},
    "coordination": {"lease_timeout": 3, "election_interval": 0.5},
}


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path).up()
    yield lab
    lab.down()


def start_filter(cluster, host):
    """`inspector pxe-filter` for host, with the deployment's configuration."""
    path = cluster.tmp_path / f"pxe-filter-{host.index}.conf"
    options = worker_options(host, DRIVER, {"pxe_filter": {"whitelist_source": "inspector"}})
    path.write_text(render_config(options))
    args = [*INSPECTOR, "pxe-filter", "--config-file", str(cluster.config_path)]
    return cluster._spawn("pxe-filter", [*args, "--config-file", str(path)])


def test_our_introspection_is_answered_by_one_pxe_filter_host(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    node = ironic_api.enroll(macs=1)
    mac = ironic_api.node_ports(node["uuid"])[0]["address"]
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=1,
        workers=1,
        options=OPTIONS,
    ) as cluster:
        filters = [start_filter(cluster, host) for host in lab.hosts]
        leader = wait_for(
            lambda: (
                all(is_filtered(host, DRIVER) for host in lab.hosts)
                and len(opened := [h for h in lab.hosts if is_open(h, DRIVER)]) == 1
                and opened[0]
            ),
            30,
            message=lambda: f"one pxe-filter host open\n{cluster.logs()}",
        )
        start(cluster, node["uuid"])
        wait_for(
            lambda: mac in listed(leader, DRIVER, "whitelist"),
            10,
            message=lambda: (
                f"{mac} whitelisted through the workers' announcement\n{cluster.logs()}"
            ),
        )
        lease = lab.lease(mac)
        assert lease is not None and lease["server"] == leader.address, lease
        assert not any(host.heard(mac) for host in lab.hosts if host is not leader)
        status = cluster.run("status", "--wait", "2")
        rows = [line.split() for line in status.stdout.splitlines() if line.startswith("host")]
        assert sorted(row[0] for row in rows) == ["host1", "host2", "host3"], status.stdout
        assert [row[3] for row in rows].count("open") == 1, status.stdout
        assert all(process.alive() for process in filters)
