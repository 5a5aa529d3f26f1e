"""A worker process with the noop PXE driver beside one with a real driver (the second
worker of a host must use noop, docs/firewall.md): the noop one, started first, does
not take the firewall's leadership, so the real host opens its PXE service, and the
workers announce to it."""

import pytest

from tests.integration.cluster import POOL_STARTED, running_deployment, wait_for
from tests.integration.firewall_lab import Lab, is_filtered, is_open, start_worker

pytestmark = pytest.mark.integration

DRIVER = "nftables"
OPTIONS = {
    "coordination": {"lease_timeout": 3, "election_interval": 0.5},
    "firewall": {"blacklist_sync_period": 0, "whitelist_sync_period": 0},
}


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path, hosts=2).up()
    yield lab
    lab.down()


def test_a_noop_worker_does_not_keep_the_real_host_closed(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url
):
    noop_host, real_host = lab.hosts
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=0,
        workers=0,
        options=OPTIONS,
    ) as cluster:
        noop = start_worker(cluster, noop_host, "noop")
        wait_for(
            lambda: POOL_STARTED in noop.log_text(),
            30,
            message=lambda: f"the noop worker started\n{cluster.logs()}",
        )
        start_worker(cluster, real_host, DRIVER)
        wait_for(
            lambda: is_filtered(real_host, DRIVER) and is_open(real_host, DRIVER),
            20,
            message=lambda: f"the real host's PXE service open\n{cluster.logs()}",
        )
        assert noop.alive()
