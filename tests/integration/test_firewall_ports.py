"""Ports created in Ironic reach the firewall's blacklist: through the channel (Ironic's
own versioned notifications on RabbitMQ) within a second, and through polling alone
(the channel off) within one polling period. Removing the port takes it out again.

The shared test Ironic sends no notifications, so this module runs a second one from
the same installation (scripts/services), configured to send them to the test
RabbitMQ on a topic of its own; both workers poll it as their Ironic.
"""

import os
import pathlib
import signal
import subprocess
import time
import uuid

import kombu
import pytest
import requests

from tests.conftest import IronicAPI, service_unavailable
from tests.integration.cluster import POOL_STARTED, ROOT, free_port, running_deployment, wait_for
from tests.integration.firewall_lab import Lab, listed, start_worker

pytestmark = pytest.mark.integration

IRONIC_VENV = ROOT / ".services" / "ironic-venv" / "bin"
DRIVER = "nftables"
#: The polling-only host's period: the port must be there within it (plus an apply).
PERIOD = 2.0

IRONIC_CONF = """\
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = {host}
log_file = {directory}/ironic.log
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake,no-bios
enabled_boot_interfaces = fake
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake
enabled_firmware_interfaces = fake,no-firmware
enabled_inspect_interfaces = agent,fake,no-inspect
enabled_management_interfaces = fake,noop
enabled_network_interfaces = noop
default_network_interface = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = fake,no-vendor
graceful_shutdown_timeout = 5
minimum_memory_warning_only = true
notification_level = info
versioned_notifications_topics = {topic}

[oslo_messaging_notifications]
driver = messagingv2
transport_url = {transport_url}

[api]
host_ip = 127.0.0.1
port = {port}
api_workers = 1

[database]
connection = sqlite:///{directory}/ironic.sqlite

[dhcp]
dhcp_provider = none

[conductor]
automated_clean = false

[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
"""


def rabbit_url(amqp_url: str) -> str:
    return "rabbit://" + amqp_url.split("://", 1)[1]


@pytest.fixture(scope="module")
def notifying_ironic(rabbitmq_server, tmp_path_factory):
    """A standalone Ironic sending versioned notifications: (URL, topic)."""
    if not (IRONIC_VENV / "ironic").exists():
        service_unavailable(f"{IRONIC_VENV}/ironic missing: scripts/services start ironic")
    directory: pathlib.Path = tmp_path_factory.mktemp("ironic")
    port, topic = free_port(), f"ironic_test_{uuid.uuid4().hex[:8]}"
    config = directory / "ironic.conf"
    config.write_text(
        IRONIC_CONF.format(
            host=f"fw-test-{topic}",
            directory=directory,
            topic=topic,
            transport_url=rabbit_url(rabbitmq_server),
            port=port,
        )
    )
    subprocess.run(
        [str(IRONIC_VENV / "ironic-dbsync"), "--config-file", str(config), "create_schema"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with open(directory / "ironic.out", "w") as out:
        # Its own process group: Ironic forks an API worker, stopped with it.
        ironic = subprocess.Popen(
            [str(IRONIC_VENV / "ironic"), "--config-file", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def answers():
        assert ironic.poll() is None, (directory / "ironic.out").read_text()
        try:
            return requests.get(f"{url}/v1", timeout=2).ok
        except requests.RequestException:
            return False

    try:
        wait_for(answers, 60, 0.2, "the notifying Ironic answering")
        yield url, topic
    finally:
        os.killpg(ironic.pid, signal.SIGTERM)
        try:
            ironic.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(ironic.pid, signal.SIGKILL)
            ironic.wait()
        delete_queues(rabbitmq_server, [f"{topic}.info"])


def delete_queues(url: str, names: list[str]) -> None:
    with kombu.Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        for name in names:
            channel.queue_delete(name)


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
