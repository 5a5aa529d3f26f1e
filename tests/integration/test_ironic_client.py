"""Our Ironic client against a real standalone Ironic (fake-hardware, noauth).

What the client does is checked in Ironic itself, over plain REST (the `ironic_api` fixture).
What it answers, and the errors it raises, are the contract in
tests/contract/test_ironic_client.py, which holds the tests' fake Ironic to the same.
"""

import socket
import time
import urllib.parse

import pytest

from inspector import conf as config
from inspector.errors import BadRequest, Conflict, NotFound, ServiceUnavailable
from inspector.ironic import Ironic, connect

pytestmark = pytest.mark.integration

#: What a switch says over LLDP, as Ironic stores it on a port.
LLDP = {"switch_id": "52:54:00:aa:bb:cc", "port_id": "Eth1/1"}


def make_conf(endpoint: str, tmp_path, *, max_retries: int = 3, retry_interval: float = 0.1):
    conf = config.load([], conf=config.build())
    conf.set_override("state_path", str(tmp_path))
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", endpoint, group="ironic")
    conf.set_override("max_retries", max_retries, group="ironic")
    conf.set_override("retry_interval", retry_interval, group="ironic")
    return conf


class Recorder:
    """The client's connection, recording every HTTP request it sends as (method, path,
    query) as Ironic receives them: the path with its /v1, the query's values as text."""

    def __init__(self, connection) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        self._connection = connection

    def send(self, method, path, body=None, params=None):
        reply = self._connection.send(method, path, body, params)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlencode(params or {})))
        self.requests.append((method, "/v1" + path, query))
        return reply

    def to(self, method: str, path: str) -> list[dict]:
        return [query for m, p, query in self.requests if m == method and p == path]


@pytest.fixture
def recorded(ironic_url, tmp_path):
    """A client whose requests are recorded, and the recorder."""
    conf = make_conf(ironic_url, tmp_path)
    recorder = Recorder(connect(conf))
    return Ironic(conf, connection=recorder), recorder


@pytest.fixture
def ironic(recorded) -> Ironic:
    return recorded[0]


def test_get_node_by_uuid_and_by_name(ironic, ironic_api):
    enrolled = ironic_api.enroll(
        driver_info={"ipmi_address": "192.0.2.1"}, properties={"cpus": 4}, extra={"rack": "r1"}
    )
    by_uuid = ironic.get_node(enrolled["uuid"])
    assert by_uuid == ironic.get_node(enrolled["name"])
    assert by_uuid.uuid == enrolled["uuid"]
    assert by_uuid.name == enrolled["name"]
    assert by_uuid.provision_state == "manageable"
    assert by_uuid.driver == "fake-hardware"
    assert by_uuid.driver_info["ipmi_address"] == "192.0.2.1"
    assert by_uuid.properties == {"cpus": 4}
    assert by_uuid.extra == {"rack": "r1"}
    assert by_uuid.maintenance is False
    assert by_uuid.inspect_interface == enrolled["inspect_interface"]
    assert by_uuid.power_state == enrolled["power_state"]


def test_list_ports_is_that_nodes_ports_in_one_request(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=3)
    other = ironic_api.enroll(macs=1, manage=False)
    expected = {p["address"] for p in ironic_api.node_ports(node["uuid"])}
    ports = ironic.list_ports(node["uuid"])
    assert {p.address for p in ports} == expected
    assert len(expected) == 3
    assert all(p.node_uuid == node["uuid"] and p.pxe_enabled for p in ports)
    assert ironic_api.node_ports(other["uuid"])[0]["address"] not in expected
    assert len(recorder.to("GET", "/v1/ports/detail")) == 1
    assert ironic.list_ports(ironic_api.enroll(macs=0, manage=False)["uuid"]) == []


def test_iter_nodes_and_iter_ports_paginate(recorded, ironic_api):
    ironic, recorder = recorded
    nodes = [ironic_api.enroll(macs=1, manage=False) for _ in range(5)]
    uuids = {n["uuid"] for n in nodes}
    macs = {p["address"] for n in nodes for p in ironic_api.node_ports(n["uuid"])}

    before = ironic.calls
    seen = [n.uuid for n in ironic.iter_nodes(page_size=2)]
    assert uuids <= set(seen)
    assert len(seen) == len(set(seen))
    pages = recorder.to("GET", "/v1/nodes/detail")
    assert len(pages) >= 3
    assert all(page["limit"] == "2" for page in pages)
    assert "marker" not in pages[0]
    assert all("marker" in page for page in pages[1:])
    assert ironic.calls - before == len(pages)

    ports = list(ironic.iter_ports(page_size=2))
    assert macs <= {p.address for p in ports}
    assert len(recorder.to("GET", "/v1/ports/detail")) >= 3


def test_iter_nodes_with_fields(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=0, manage=False)
    found = [n for n in ironic.iter_nodes(fields=["name"]) if n.uuid == node["uuid"]]
    assert [(n.uuid, n.name, n.provision_state) for n in found] == [
        (node["uuid"], node["name"], None)
    ]
    assert recorder.to("GET", "/v1/nodes")[0]["fields"] == "uuid,name"


def test_set_boot_device(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=0)
    ironic.set_boot_device(node["uuid"], "pxe", persistent=True)
    current = ironic_api.request("GET", f"/nodes/{node['uuid']}/management/boot_device")
    assert current["boot_device"] == "pxe"
    assert len(recorder.to("PUT", f"/v1/nodes/{node['uuid']}/management/boot_device")) == 1
    # Fake hardware supports only pxe: Ironic's driver answered, with its own message.
    with pytest.raises(BadRequest, match="Invalid boot device disk"):
        ironic.set_boot_device(node["uuid"], "disk")


def test_set_power_state(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=0)
    ironic.set_power_state(node["uuid"], "power on")
    assert len(recorder.to("PUT", f"/v1/nodes/{node['uuid']}/states/power")) == 1
    ironic_api.wait_for(node["uuid"], lambda n: n["power_state"] == "power on")
    ironic.set_power_state(node["uuid"], "power off")
    ironic_api.wait_for(node["uuid"], lambda n: n["power_state"] == "power off")
    ironic.set_power_state(node["uuid"], "rebooting")
    ironic_api.wait_for(
        node["uuid"], lambda n: n["power_state"] == "power on" and not n["target_power_state"]
    )
    with pytest.raises(BadRequest):
        ironic.set_power_state(node["uuid"], "sideways")


def test_patch_node_is_one_patch(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=0, properties={"cpus": 2})
    ironic.get_node(node["uuid"])  # the connection's version discovery happens here
    before = ironic.calls
    patched = ironic.patch_node(
        node["uuid"],
        [
            {"op": "add", "path": "/extra/inspected", "value": True},
            {"op": "replace", "path": "/properties/cpus", "value": 8},
        ],
    )
    assert patched.extra == {"inspected": True}
    assert patched.properties == {"cpus": 8}
    stored = ironic_api.get_node(node["uuid"])
    assert stored["extra"] == {"inspected": True}
    assert stored["properties"] == {"cpus": 8}
    assert len(recorder.to("PATCH", f"/v1/nodes/{node['uuid']}")) == 1
    assert ironic.calls - before == 1
    with pytest.raises(BadRequest, match="Cannot patch /nonexistent"):
        ironic.patch_node(node["uuid"], [{"op": "add", "path": "/nonexistent", "value": 1}])


def test_patch_node_resetting_interfaces(recorded, ironic_api):
    ironic, recorder = recorded
    node = ironic_api.enroll(macs=0)
    path = f"/v1/nodes/{node['uuid']}"
    change = [{"op": "replace", "path": "/driver", "value": "fake-hardware"}]
    assert ironic.patch_node(node["uuid"], change, reset_interfaces=True).driver == "fake-hardware"
    assert recorder.to("PATCH", path) == [{"reset_interfaces": "true"}]
    ironic.patch_node(node["uuid"], change)
    assert recorder.to("PATCH", path)[1] == {}


def test_traits(ironic, ironic_api):
    node = ironic_api.enroll(macs=0, manage=False)
    traits = f"/nodes/{node['uuid']}/traits"
    ironic.add_trait(node["uuid"], "CUSTOM_GPU")
    ironic.add_trait(node["uuid"], "CUSTOM_FPGA")
    assert sorted(ironic_api.request("GET", traits)["traits"]) == ["CUSTOM_FPGA", "CUSTOM_GPU"]
    ironic.remove_trait(node["uuid"], "CUSTOM_GPU")
    assert ironic_api.request("GET", traits)["traits"] == ["CUSTOM_FPGA"]
    # Ironic answers 404 for a trait the node has not: that is fine; no node is not.
    ironic.remove_trait(node["uuid"], "CUSTOM_GPU")
    with pytest.raises(NotFound, match="could not be found"):
        ironic.remove_trait("no-such-node", "CUSTOM_GPU")
    with pytest.raises(BadRequest, match="trait"):
        ironic.add_trait(node["uuid"], "not-a-trait")


def test_create_update_delete_port(ironic, ironic_api):
    node = ironic_api.enroll(macs=0)
    mac = ironic_api.new_mac()
    port = ironic.create_port(node["uuid"], mac, pxe_enabled=False, extra={"by": "test"})
    assert (port.node_uuid, port.address, port.pxe_enabled) == (node["uuid"], mac, False)
    stored = ironic_api.request("GET", f"/ports/{port.uuid}")
    assert (stored["address"], stored["pxe_enabled"], stored["extra"]) == (
        mac,
        False,
        {"by": "test"},
    )

    with pytest.raises(Conflict, match="already exists"):
        ironic.create_port(node["uuid"], mac)

    updated = ironic.update_port(
        port.uuid,
        [
            {"op": "replace", "path": "/pxe_enabled", "value": True},
            {"op": "add", "path": "/local_link_connection", "value": LLDP},
        ],
    )
    assert updated.pxe_enabled is True
    assert updated.local_link_connection == LLDP
    assert ironic_api.request("GET", f"/ports/{port.uuid}")["pxe_enabled"] is True

    ironic.delete_port(port.uuid)
    assert ironic_api.node_ports(node["uuid"]) == []
    with pytest.raises(NotFound):
        ironic.delete_port(port.uuid)
    with pytest.raises(NotFound):
        ironic.update_port(port.uuid, [{"op": "add", "path": "/extra/a", "value": 1}])


def test_create_node(ironic, ironic_api):
    name = f"discovered-{time.monotonic_ns()}"
    node = ironic.create_node(
        driver="fake-hardware", name=name, driver_info={"ipmi_address": "192.0.2.7"}
    )
    ironic_api.track(node.uuid)
    assert (node.name, node.driver, node.provision_state) == (name, "fake-hardware", "enroll")
    stored = ironic_api.get_node(name)
    assert stored["uuid"] == node.uuid
    assert stored["driver_info"]["ipmi_address"] == "192.0.2.7"
    with pytest.raises(Conflict):
        ironic.create_node(driver="fake-hardware", name=name)


def test_ironic_down_is_service_unavailable_after_the_retries(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    # Nothing listens there any more: every attempt is refused at once.
    conf = make_conf(
        f"http://127.0.0.1:{closed_port}", tmp_path, max_retries=2, retry_interval=0.05
    )
    ironic = Ironic(conf)
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match=r"Ironic is unavailable.* after 3 attempts"):
        ironic.get_node("any")
    assert time.monotonic() - started >= 2 * 0.05
    assert ironic.calls == 3
    with pytest.raises(ServiceUnavailable):
        list(ironic.iter_ports())
