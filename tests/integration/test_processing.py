"""Whole introspections against the real Ironic 39: what lands in Ironic, discovery,
unmanaged boot, rules, a node deleted mid-way, the store on MariaDB. One API and one
worker process."""

import pathlib
import subprocess

import pytest
import requests

from inspector.store import Store
from tests.integration.cluster import (
    Deployment,
    ipa_payload,
    macs,
    post_continue,
    running_deployment,
    start,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, postgresql_admin, rabbitmq_server, redis_server, ironic_url):
    with running_deployment(
        tmp_path_factory.mktemp("processing"),
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        options={
            "processing": {"node_not_found_hook": "enroll", "add_ports": "all"},
            "discovery": {"enroll_node_driver": "fake-hardware"},
        },
    ) as cluster:
        yield cluster


def test_managed_boot_end_to_end(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node)
    # Ironic applies the reboot in its conductor after answering 202: the node may be
    # `waiting` here a moment before Ironic shows it powered on.
    ironic_api.wait_for(node, lambda n: n["power_state"] == "power on")
    payload = ipa_payload(macs(ironic_api, node))
    assert post_continue(deployment, payload).json() == {"uuid": node}
    final = wait_state(deployment, node, "finished")
    assert final["error"] is None
    node_after = ironic_api.wait_for(node, lambda n: n["power_state"] == "power off")
    inventory = payload["inventory"]
    assert node_after["properties"]["cpus"] == str(inventory["cpu"]["count"])
    assert node_after["properties"]["memory_mb"] == str(inventory["memory"]["physical_mb"])
    assert node_after["properties"]["cpu_arch"] == inventory["cpu"]["architecture"]
    data = requests.get(f"{deployment.url}/v1/introspection/{node}/data", timeout=10).json()
    assert data["inventory"] == inventory


def test_unmanaged_boot_leaves_power_alone(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node, manage_boot="false")
    assert ironic_api.get_node(node)["power_state"] in (None, "power off")
    post_continue(deployment, ipa_payload(macs(ironic_api, node)))
    wait_state(deployment, node, "finished")
    assert ironic_api.get_node(node)["power_state"] in (None, "power off")


def test_rules_set_capabilities_and_traits(deployment, ironic_api):
    rule = {
        "description": "tag what was introspected",
        "conditions": [{"op": "ge", "field": "inventory.cpu.count", "value": 1}],
        "actions": [
            {"action": "set-capability", "name": "introspected", "value": "yes"},
            {"action": "add-trait", "name": "CUSTOM_INTROSPECTED"},
            {
                "action": "set-attribute",
                "path": "/extra/vendor",
                "value": "{data[inventory][system_vendor][manufacturer]}",
            },
        ],
    }
    created = requests.post(f"{deployment.url}/v1/rules", json=rule, timeout=10)
    assert created.status_code == 201, created.text
    try:
        node = ironic_api.enroll()["uuid"]
        start(deployment, node)
        payload = ipa_payload(macs(ironic_api, node))
        post_continue(deployment, payload)
        wait_state(deployment, node, "finished")
        in_ironic = ironic_api.get_node(node)
        assert "introspected:yes" in in_ironic["properties"]["capabilities"]
        assert (
            in_ironic["extra"]["vendor"] == (payload["inventory"]["system_vendor"]["manufacturer"])
        )
        traits = ironic_api.request("GET", f"/nodes/{node}/traits")["traits"]
        assert "CUSTOM_INTROSPECTED" in traits
    finally:
        requests.delete(f"{deployment.url}/v1/rules/{created.json()['uuid']}", timeout=10)


def test_discovery_enrolls_an_unknown_node(deployment, ironic_api):
    mac = ironic_api.new_mac()
    answer = post_continue(deployment, ipa_payload([mac]))
    assert answer.status_code == 200, answer.text
    node = ironic_api.track(answer.json()["uuid"])
    final = wait_state(deployment, node, "finished")
    assert final["error"] is None
    in_ironic = ironic_api.get_node(node)
    assert in_ironic["driver"] == "fake-hardware"
    assert mac in macs(ironic_api, node)  # validate_interfaces created its port


def test_node_deleted_from_ironic_mid_way_fails_cleanly(deployment, ironic_api):
    node = ironic_api.enroll()["uuid"]
    start(deployment, node)
    payload = ipa_payload(macs(ironic_api, node))
    ironic_api.delete_nodes()  # the operator removed it while its ramdisk booted
    post_continue(deployment, payload)
    final = wait_state(deployment, node, "error")
    assert "not found" in final["error"].lower() or "could not be found" in final["error"]


def services(action):
    script = pathlib.Path(__file__).parents[2] / "scripts" / "services"
    subprocess.run([str(script), action, "ironic"], check=True, timeout=300)


@pytest.mark.alone  # it restarts the Ironic every other test uses
def test_ironic_restarted_mid_run_is_retried(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        options={"ironic": {"max_retries": 120, "retry_interval": 0.5}},
    ) as cluster:
        node = ironic_api.enroll()["uuid"]
        start(cluster, node)
        payload = ipa_payload(macs(ironic_api, node))
        services("stop")
        try:
            # Ironic is down: the API still takes the data; the worker retries.
            assert post_continue(cluster, payload).json() == {"uuid": node}
        finally:
            services("start")
        final = wait_state(cluster, node, "finished", timeout=120)
        assert final["error"] is None
        assert "retrying" in cluster.logs()


@pytest.mark.mysql
def test_a_whole_introspection_with_the_store_on_mariadb(
    tmp_path, mysql_url, rabbitmq_url, redis_url, queue_name, ironic_api
):
    deployment = Deployment(
        tmp_path,
        database_url=mysql_url,
        queue_url=rabbitmq_url,
        queue_name=queue_name,
        redis_url=redis_url,
        ironic_url=ironic_api.url,
    )
    with deployment:
        deployment.start()  # `inspector db upgrade` on MariaDB, then an API and a worker
        node = ironic_api.enroll()["uuid"]
        start(deployment, node)
        ironic_api.wait_for(node, lambda n: n["power_state"] == "power on")
        payload = ipa_payload(macs(ironic_api, node))
        assert post_continue(deployment, payload).json() == {"uuid": node}
        final = wait_state(deployment, node, "finished")
        assert final["error"] is None
        node_after = ironic_api.wait_for(node, lambda n: n["power_state"] == "power off")
        inventory = payload["inventory"]
        assert node_after["properties"]["cpus"] == str(inventory["cpu"]["count"])
        assert node_after["properties"]["memory_mb"] == str(inventory["memory"]["physical_mb"])
        assert node_after["properties"]["cpu_arch"] == inventory["cpu"]["architecture"]
        data = requests.get(f"{deployment.url}/v1/introspection/{node}/data", timeout=10).json()
        assert data["inventory"] == inventory
    # What the processes wrote is on MariaDB: the node's history, every request done.
    store = Store.from_url(mysql_url)
    try:
        assert store.engine.dialect.name == "mysql"
        history = store.history(node)
        assert [r.event for r in history] == ["inspect", "wait", "continue", "finish"]
        assert {r.status for r in history} == {"done"}
        assert store.get_data(node, processed=False)["inventory"] == inventory
    finally:
        store.close()
