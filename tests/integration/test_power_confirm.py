"""Power actions confirmed against a real, private Ironic whose fake power is slow, with a
worker process on the real services (PostgreSQL, RabbitMQ, Redis): Ironic killed while
its conductor runs the power-on, Ironic keeping the node locked, Ironic refusing the
final power-off. The shared Ironic is never touched.
"""

import contextlib
import time

import pytest

from tests.conftest import IronicAPI
from tests.integration.ironic_lab import PowerLab
from tests.integration.test_worker import Cluster, wait_for

pytestmark = pytest.mark.integration

#: Seconds (whole: Ironic reads an int) each call of the lab's fake power driver takes:
#: a power action stays pending twice that (Ironic reads the power state, then sets it)
#: under the node's lock.
POWER_DELAY = 2
#: The fake power of the lab whose node stays locked, in whole seconds.
LOCKED_DELAY = 6
#: The worker's [ironic] power_confirm_timeout (the default).
CONFIRM_TIMEOUT = 30.0
#: disable_power_off: the node field Ironic 2025.1 (API 1.95) refuses power-offs with.
DISABLE_POWER_OFF_VERSION = "1.95"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = PowerLab(tmp_path_factory.mktemp("power"), POWER_DELAY)
    lab.start()
    yield lab
    lab.stop()


@pytest.fixture
def workers(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name):
    """A worker process on the real services, for `lab`, with `ironic_retries`."""
    clusters = []

    def start(lab: PowerLab, ironic_retries: int = 3) -> Cluster:
        api = IronicAPI(lab.url)
        cluster = Cluster(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, api)
        clusters.append(cluster)
        text = cluster.config.read_text().replace(
            "max_retries = 3", f"max_retries = {ironic_retries}"
        )
        cluster.config.write_text(text)
        cluster.start_worker()
        return cluster

    yield start
    for cluster in clusters:
        cluster.close()
        cluster.ironic_api.session.close()


@pytest.fixture
def cluster(lab, workers):
    return workers(lab)


def worker_log(cluster) -> str:
    return (cluster.tmp_path / "worker-0.log").read_text(errors="replace")


def test_ironic_killed_while_its_conductor_powers_on_asks_again_and_finishes(lab, cluster):
    """The window is made certain, not raced: the lab's fake power takes POWER_DELAY
    seconds a call, so the power-on Inspector asked for stays pending (Ironic's
    target_power_state set, its lock held) about 2 x POWER_DELAY seconds after the 202;
    the test polls Ironic and the node's state every 50 ms and sends SIGKILL to Ironic's
    process group as soon as it sees that target and the node `waiting` (the worker had
    the 202: Ironic sets the target before it answers, and one killed in between left
    the worker without an answer, a different fault). Started again, Ironic clears the
    target ("Pending power operation was aborted due to conductor restart"): the
    worker's check sees the lost action, asks again, and the introspection goes on to
    finish (its power-off checked too)."""
    api = cluster.ironic_api
    node = cluster.new_node()
    cluster.put(node, "inspect")
    wait_for(
        lambda: (
            cluster.state(node) == "waiting"
            and api.get_node(node)["target_power_state"] == "power on"
        ),
        30,
        0.05,
        message="the power-on accepted (202) and still pending in Ironic",
    )
    lab.kill()
    lab.start()
    # Its conductor may clean up after its API answers: waited for, with a deadline.
    cleared = "Cleared target_power_state of the locked nodes in powering process"
    wait_for(lambda: cleared in lab.log(), 30, message="Ironic's clean-up of the killed action")
    try:
        wait_for(lambda: api.get_node(node)["power_state"] == "power on", 30, message="power on")
    except AssertionError as exc:  # what the worker did, in the failure
        raise AssertionError(
            f"{exc}; the worker's log ends:\n{worker_log(cluster)[-6000:]}"
        ) from exc
    assert "Ironic lost the power on (Pending power operation was aborted due to conductor" in (
        worker_log(cluster)
    )
    assert "asking again (2 of 3)" in worker_log(cluster)
    assert cluster.state(node) == "waiting"
    cluster.store_ramdisk_data(node)
    cluster.put(node, "continue")
    cluster.wait_state(node, "finished", timeout=30)
    wait_for(lambda: api.get_node(node)["power_state"] == "power off", 30, message="power off")
    wait_for(lambda: ".power-off.1] power action confirmed" in worker_log(cluster), 15)
    assert cluster.store.get_node(node).error is None


def test_a_node_ironic_keeps_locked_ends_in_error_with_its_reason_at_once(
    tmp_path_factory, workers
):
    """Ironic holds the node's lock for its own power-on, slowed to 2 x LOCKED_DELAY s,
    while the worker asks for the boot device. Ironic tries the lock for about 2 s itself
    before it answers 409 NodeLocked; with [ironic] max_retries 1, the worker's two
    attempts end well within the lock's 12 s: a refusal of this node, not an outage (it
    would be retried up to [DEFAULT] timeout)."""
    with slow_lab(tmp_path_factory, LOCKED_DELAY) as lab:
        cluster = workers(lab, ironic_retries=1)
        api = cluster.ironic_api
        node = cluster.new_node()
        api.request("PUT", f"/nodes/{node}/states/power", {"target": "power on"})
        began = time.monotonic()
        cluster.put(node, "inspect")
        cluster.wait_state(node, "error", timeout=CONFIRM_TIMEOUT)
        assert time.monotonic() - began < 2 * LOCKED_DELAY
        error = cluster.store.get_node(node).error
        assert "the node stayed locked for 2 attempts" in error
        assert f"Node {node} is locked by host" in error


@contextlib.contextmanager
def slow_lab(tmp_path_factory, delay):
    lab = PowerLab(tmp_path_factory.mktemp("locked"), delay)
    lab.start()
    try:
        yield lab
    finally:
        lab.kill()  # at once: a stop would wait for its slow power action


def test_a_final_power_off_ironic_refuses_is_recorded_and_the_introspection_finishes(lab, cluster):
    """disable_power_off makes Ironic refuse every power-off (409): the worker asks once
    more, then records Ironic's reason on the finished introspection. The node is
    manageable: one in enroll would have its failed power-off only logged."""
    api = cluster.ironic_api
    node = api.enroll()["uuid"]
    response = api.session.patch(
        f"{api.url}/v1/nodes/{node}",
        json=[{"op": "replace", "path": "/disable_power_off", "value": True}],
        headers={"X-OpenStack-Ironic-API-Version": DISABLE_POWER_OFF_VERSION},
        timeout=10,
    )
    assert response.ok, response.text
    cluster.put(node, "inspect")
    wait_for(lambda: api.get_node(node)["power_state"] == "power on", 30, message="power on")
    cluster.wait_state(node, "waiting")
    cluster.store_ramdisk_data(node)
    cluster.put(node, "continue")
    wait_for(lambda: cluster.store.get_node(node).error, CONFIRM_TIMEOUT, message="an error")
    record = cluster.store.get_node(node)
    assert record.state == "finished"
    assert record.error.startswith(
        "Failed to power off the node, check its power management configuration: "
        "Ironic refused to set the power of node"
    )
    assert "Failed to set node power state to power off" in record.error
    assert api.get_node(node)["power_state"] == "power on"
