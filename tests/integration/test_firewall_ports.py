"""Ports created in Ironic reach the firewall's blacklist: through the channel (Ironic's
own versioned notifications on RabbitMQ) within a second, and through polling alone
(the channel off) within one polling period. Removing the port takes it out again.

This module runs an Ironic of its own (tests/integration/ironic_lab.py), sending its
notifications to the test RabbitMQ on a topic of its own; both workers poll it as their
Ironic.
"""

import time
import uuid

import pytest

from tests.conftest import IronicAPI
from tests.integration.cluster import POOL_STARTED, running_deployment, wait_for
from tests.integration.firewall_lab import Lab, listed, start_worker
from tests.integration.ironic_lab import delete_queues, notifying_ironic

pytestmark = pytest.mark.integration

DRIVER = "nftables"
#: The polling-only host's period: the port must be there within it (plus an apply).
PERIOD = 2.0


@pytest.fixture(scope="module", name="notifying_ironic")
def notifying_ironic_fixture(rabbitmq_server, tmp_path_factory):
    """A standalone Ironic sending versioned notifications: (URL, topic)."""
    with notifying_ironic(rabbitmq_server, tmp_path_factory.mktemp("ironic")) as ironic:
        yield ironic


def test_ports_are_blacklisted_through_the_channel_and_through_polling(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, notifying_ironic
):
    ironic_url, ironic_topic = notifying_ironic
    channel_topic = f"inspector_firewall_{uuid.uuid4().hex[:8]}"
    lab = Lab(tmp_path, hosts=2).up()
    api = IronicAPI(ironic_url)
    try:
        with running_deployment(
            tmp_path,
            postgresql_admin,
            queue_url=rabbitmq_server,
            redis_url=redis_server,
            ironic_url=ironic_url,
            apis=0,
            workers=0,
            options={"firewall": {"channel_topic": channel_topic, "whitelist_sync_period": 0}},
        ) as cluster:
            by_channel, by_polling = lab.hosts
            # host1: Ironic's notifications only; host2: polling Ironic only.
            listener = start_worker(
                cluster,
                by_channel,
                DRIVER,
                {"firewall": {"ironic_topic": ironic_topic, "blacklist_sync_period": 0}},
            )
            poller = start_worker(
                cluster,
                by_polling,
                DRIVER,
                {"firewall": {"channel_enabled": False, "blacklist_sync_period": PERIOD}},
            )
            wait_for(
                lambda: (
                    "Listening to the firewall channel" in listener.log_text()
                    and POOL_STARTED in poller.log_text()
                ),
                30,
                message="both workers listening or polling",
            )
            node = api.enroll(macs=0, manage=False)
            mac = api.new_mac()
            created = time.monotonic()
            port = api.request("POST", "/ports", {"node_uuid": node["uuid"], "address": mac})
            returned = time.monotonic()
            seen = {
                host.namespace: wait_for(
                    lambda host=host: mac in listed(host, DRIVER, "blacklist") and time.monotonic(),
                    PERIOD + 10,
                    0.02,
                    f"{mac} blacklisted on {host.namespace}",
                )
                - returned
                for host in (by_channel, by_polling)
            }
            print(
                f"port created (POST took {returned - created:.2f} s); blacklisted through "
                f"the channel after {seen[by_channel.namespace]:.2f} s, by polling every "
                f"{PERIOD:g} s after {seen[by_polling.namespace]:.2f} s"
            )
            assert seen[by_channel.namespace] < 1.0
            assert seen[by_polling.namespace] < PERIOD + 0.5

            api.request("DELETE", f"/ports/{port['uuid']}")
            for host in (by_channel, by_polling):
                wait_for(
                    lambda host=host: mac not in listed(host, DRIVER, "blacklist"),
                    PERIOD + 10,
                    0.02,
                    f"{mac} out of {host.namespace}'s blacklist",
                )
    finally:
        api.delete_nodes()
        lab.down()
        # The per-host queue of Ironic's notifications outlives its worker by design.
        delete_queues(rabbitmq_server, [f"{channel_topic}.host1.ironic"])
