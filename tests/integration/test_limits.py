"""The [limits] against the real Ironic: a payload with many NICs creates no more ports
than [limits] max_new_ports, and one over [limits] max_interfaces is refused at the door.
One API and one worker process."""

import pytest
import requests

from tests.integration.cluster import (
    ipa_payload,
    macs,
    post_continue,
    running_deployment,
    start,
    status,
    wait_state,
)

pytestmark = pytest.mark.integration

MAX_NEW_PORTS = 3


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, postgresql_admin, rabbitmq_server, redis_server, ironic_url):
    with running_deployment(
        tmp_path_factory.mktemp("limits"),
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        options={"limits": {"max_new_ports": MAX_NEW_PORTS}},
    ) as cluster:
        yield cluster


def many_nics(ironic_api, node, new):
    """The node's own NIC, then `new` NICs Ironic has no port for, all with an address
    and no boot_interface: [processing] add_ports = pxe then selects every one."""
    payload = ipa_payload(macs(ironic_api, node) + [ironic_api.new_mac() for _ in range(new)])
    assert payload.get("boot_interface") is None
    assert payload["inventory"]["boot"]["pxe_interface"] is None
    return payload


def test_many_nics_create_no_more_ports_than_the_limit(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node)
    assert post_continue(deployment, many_nics(ironic_api, node, 100)).status_code == 200
    final = wait_state(deployment, node, "error")
    assert f"more than [limits] max_new_ports = {MAX_NEW_PORTS}" in final["error"]
    assert "would create 100 Ironic ports" in final["error"]
    assert len(ironic_api.node_ports(node)) == 1  # its own: none created


def test_as_many_new_ports_as_the_limit_are_created(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node)
    payload = many_nics(ironic_api, node, MAX_NEW_PORTS)
    assert post_continue(deployment, payload).status_code == 200
    assert wait_state(deployment, node, "finished")["error"] is None
    wanted = {i["mac_address"] for i in payload["inventory"]["interfaces"]}
    assert set(macs(ironic_api, node)) == wanted and len(wanted) == MAX_NEW_PORTS + 1


def test_more_interfaces_than_max_interfaces_is_a_400(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node)
    answer = post_continue(deployment, many_nics(ironic_api, node, 256))
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == (
        "Ramdisk data over a limit: inventory.interfaces has 257 interfaces, more than "
        "[limits] max_interfaces = 256"
    )
    assert status(deployment, node)["state"] == "waiting"  # it will time out; abort it
    aborted = requests.post(f"{deployment.url}/v1/introspection/{node}/abort", timeout=10)
    assert aborted.status_code == 202
    assert len(ironic_api.node_ports(node)) == 1
    raw = requests.get(f"{deployment.url}/v1/introspection/{node}/data/unprocessed", timeout=10)
    assert raw.status_code == 404  # nothing was stored
