"""The Ironic client contract, one suite run on the unit tests' fake Ironic and on a real
standalone Ironic (fake-hardware, noauth) through our client: what the service calls
through `inspector.ironic.IronicClient`, with the errors each failure becomes.

The fake stands in for Ironic in the unit tests: whatever it answers differently from
Ironic here is a bug of the fake. Each test enrolls one or two nodes, in Ironic's
`enroll` state (no wait for `manageable`); the real ones are deleted after the test.
The real client's own requests (pagination, one request per call, retries) are checked
in tests/integration/test_ironic_client.py.
"""

import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from inspector.errors import BadRequest, Conflict, NotFound
from inspector.ironic import Ironic, IronicClient, IronicNode, IronicPort
from tests.conftest import IronicAPI
from tests.fakes.ironic import FakeIronic
from tests.integration.test_ironic_client import make_conf

#: Seconds a real Ironic gets to reach the power state asked (fake hardware: at once).
SETTLE = 30.0
#: A node UUID neither Ironic has.
UNKNOWN = "9e0c2a0c-1111-4d2e-ae87-c02d7f33c123"


class Lab:
    """An Ironic, the client on it, and how a test enrolls its nodes there."""

    def __init__(
        self,
        client: IronicClient,
        enroll: Callable[[int, dict[str, Any]], str],
        track: Callable[[str], object] = lambda node_uuid: None,
    ) -> None:
        self.client = client
        self._enroll = enroll
        #: Deletes a node the client created after the test.
        self.track = track

    def enroll(self, *, macs: int = 0, **fields: Any) -> IronicNode:
        """A fake-hardware node in the `enroll` state with `macs` PXE ports."""
        fields.setdefault("name", f"test-{uuid.uuid4().hex[:12]}")
        return self.client.get_node(self._enroll(macs, fields))

    def settled(self, node_uuid: str, power_state: str) -> IronicNode:
        """The node once it reached `power_state` with no action pending."""
        deadline = time.monotonic() + SETTLE
        while True:
            node = self.client.get_node(node_uuid)
            if node.power_state == power_state and node.target_power_state is None:
                return node
            if time.monotonic() > deadline:
                pytest.fail(f"node {node_uuid} did not reach {power_state}: {node}")
            time.sleep(0.1)


def _fake_lab() -> Lab:
    fake = FakeIronic()

    def enroll(macs: int, fields: dict[str, Any]) -> str:
        node = fake.add_node(provision_state="enroll", power_state=None, **fields)
        for _ in range(macs):
            fake.add_port(node.uuid, IronicAPI.new_mac())
        return node.uuid

    return Lab(fake, enroll)


def _real_lab(api: IronicAPI, tmp_path) -> Lab:
    def enroll(macs: int, fields: dict[str, Any]) -> str:
        return api.enroll(macs=macs, manage=False, **fields)["uuid"]

    return Lab(Ironic(make_conf(api.url, tmp_path)), enroll, api.track)


@pytest.fixture(params=["fake", pytest.param("ironic", marks=pytest.mark.integration)])
def lab(request: pytest.FixtureRequest, tmp_path) -> Iterator[Lab]:
    if request.param == "fake":
        yield _fake_lab()
    else:
        yield _real_lab(request.getfixturevalue("ironic_api"), tmp_path)


def test_a_node_is_found_by_uuid_or_name_and_an_unknown_one_is_not(lab: Lab) -> None:
    node = lab.enroll(driver_info={"ipmi_address": "192.0.2.1"}, extra={"rack": "r1"})
    assert lab.client.get_node(node.name) == node
    assert (node.driver, node.provision_state, node.power_state) == (
        "fake-hardware",
        "enroll",
        None,
    )
    assert (node.driver_info["ipmi_address"], node.extra) == ("192.0.2.1", {"rack": "r1"})
    assert (node.properties, node.maintenance, node.target_power_state) == ({}, False, None)
    # Ironic's 404 in ironic-inspector's words; "detail" is a route of Ironic's, not a node.
    for ident in (UNKNOWN, "no-such-node-name", "detail"):
        with pytest.raises(NotFound) as caught:
            lab.client.get_node(ident)
        assert caught.value.message == f"Node {ident} was not found in Ironic"


def test_a_created_node_is_enrolled_and_its_name_is_its_own(lab: Lab) -> None:
    name = f"discovered-{uuid.uuid4().hex[:12]}"
    node = lab.client.create_node(driver="fake-hardware", name=name, extra={"by": "us"})
    lab.track(node.uuid)
    assert (node.name, node.driver, node.provision_state) == (name, "fake-hardware", "enroll")
    assert (node.extra, node.power_state) == ({"by": "us"}, None)
    assert lab.client.get_node(name).uuid == node.uuid
    with pytest.raises(Conflict):
        lab.client.create_node(driver="fake-hardware", name=name)
    with pytest.raises(BadRequest):
        lab.client.create_node(driver="fake-hardware", name="not a host name")


def test_a_patch_changes_the_node_or_is_refused_whole(lab: Lab) -> None:
    node = lab.enroll(properties={"cpus": 2}, extra={"old": 1})
    patched = lab.client.patch_node(
        node.uuid,
        [
            {"op": "add", "path": "/extra/inspected", "value": True},
            {"op": "replace", "path": "/properties/cpus", "value": 8},
            {"op": "remove", "path": "/extra/old"},
        ],
    )
    assert (patched.extra, patched.properties) == ({"inspected": True}, {"cpus": 8})
    assert lab.client.get_node(node.uuid) == patched
    refused = [
        [{"op": "remove", "path": "/extra/missing"}],
        [{"op": "replace", "path": "/extra/missing", "value": 1}],
        [{"op": "add", "path": "/extra/missing/deeper", "value": 1}],
        [{"op": "add", "path": "/nonexistent", "value": 1}],
        [{"op": "replace", "path": "/uuid", "value": UNKNOWN}],
        # the first operation is valid: nothing of a refused patch is applied
        [{"op": "add", "path": "/extra/half", "value": 1}, {"op": "remove", "path": "/extra/x"}],
    ]
    for patch in refused:
        with pytest.raises(BadRequest):
            lab.client.patch_node(node.uuid, patch)
    assert lab.client.get_node(node.uuid) == patched
    emptied = lab.client.patch_node(
        node.uuid, [{"op": "remove", "path": "/extra"}, {"op": "remove", "path": "/name"}]
    )
    assert (emptied.extra, emptied.name) == ({}, None)
    with pytest.raises(NotFound):
        lab.client.patch_node(UNKNOWN, [{"op": "add", "path": "/extra/a", "value": 1}])


def test_power_actions_reach_their_state(lab: Lab) -> None:
    node = lab.enroll()
    lab.client.set_power_state(node.uuid, "power on")
    lab.settled(node.uuid, "power on")
    lab.client.set_power_state(node.uuid, "power off")
    lab.settled(node.uuid, "power off")
    lab.client.set_power_state(node.uuid, "rebooting")
    assert lab.settled(node.uuid, "power on").last_error is None
    with pytest.raises(BadRequest):
        lab.client.set_power_state(node.uuid, "sideways")
    with pytest.raises(NotFound):
        lab.client.set_power_state(UNKNOWN, "power on")


def test_boot_device(lab: Lab) -> None:
    node = lab.enroll()
    lab.client.set_boot_device(node.uuid, "pxe", persistent=True)
    lab.client.set_boot_device(node.uuid)
    # Fake hardware boots from the network only: its driver refuses the others.
    with pytest.raises(BadRequest, match="Invalid boot device disk"):
        lab.client.set_boot_device(node.uuid, "disk")
    with pytest.raises(NotFound):
        lab.client.set_boot_device(UNKNOWN)


def test_ports_are_listed_per_node_and_found_by_mac(lab: Lab) -> None:
    node = lab.enroll(macs=2)
    other = lab.enroll(macs=1)
    ports = lab.client.list_ports(node.uuid)
    (theirs,) = lab.client.list_ports(other.uuid)
    assert len(ports) == 2
    assert all(p.node_uuid == node.uuid and p.pxe_enabled for p in ports)
    assert theirs.address not in {p.address for p in ports}
    everyone = {p.uuid: p for p in lab.client.iter_ports()}
    assert {p.uuid for p in (*ports, theirs)} <= everyone.keys()
    assert everyone[theirs.uuid] == theirs
    bare = {p.uuid: p for p in lab.client.iter_ports(fields=())}
    assert bare[theirs.uuid] == IronicPort.from_ironic(
        {"uuid": theirs.uuid, "node_uuid": other.uuid, "address": theirs.address}
    )
    assert lab.client.port_owner(ports[0].address) == node.uuid
    assert lab.client.port_owner(theirs.address.upper()) == other.uuid
    assert lab.client.port_owner(IronicAPI.new_mac()) is None
    with pytest.raises(BadRequest):
        lab.client.port_owner("not-a-mac")
    with pytest.raises(NotFound):
        lab.client.list_ports(UNKNOWN)


def test_a_port_is_created_updated_and_deleted(lab: Lab) -> None:
    node = lab.enroll()
    mac = IronicAPI.new_mac()
    port = lab.client.create_port(node.uuid, mac.upper(), pxe_enabled=False, extra={"by": "us"})
    assert (port.node_uuid, port.address, port.pxe_enabled, port.extra) == (
        node.uuid,
        mac,
        False,
        {"by": "us"},
    )
    assert lab.client.list_ports(node.uuid) == [port]
    with pytest.raises(Conflict):
        lab.client.create_port(node.uuid, mac)
    with pytest.raises(BadRequest):
        lab.client.create_port(UNKNOWN, IronicAPI.new_mac())
    with pytest.raises(BadRequest):
        lab.client.create_port(node.uuid, "not-a-mac")
    lldp = {"switch_id": "52:54:00:aa:bb:cc", "port_id": "Eth1/1"}
    updated = lab.client.update_port(
        port.uuid,
        [
            {"op": "replace", "path": "/pxe_enabled", "value": True},
            {"op": "add", "path": "/local_link_connection", "value": lldp},
        ],
    )
    assert (updated.pxe_enabled, updated.local_link_connection) == (True, lldp)
    assert lab.client.list_ports(node.uuid) == [updated]
    lab.client.delete_port(port.uuid)
    assert lab.client.list_ports(node.uuid) == []
    assert lab.client.port_owner(mac) is None
    with pytest.raises(NotFound):
        lab.client.delete_port(port.uuid)
    with pytest.raises(NotFound):
        lab.client.update_port(port.uuid, [{"op": "add", "path": "/extra/a", "value": 1}])


def test_traits(lab: Lab) -> None:
    node = lab.enroll()
    lab.client.add_trait(node.uuid, "CUSTOM_GPU")
    lab.client.add_trait(node.uuid, "CUSTOM_GPU")
    lab.client.remove_trait(node.uuid, "CUSTOM_GPU")
    lab.client.remove_trait(node.uuid, "CUSTOM_GPU")  # one the node has not: fine
    with pytest.raises(BadRequest):
        lab.client.add_trait(node.uuid, "not-a-trait")
    for call in (lab.client.add_trait, lab.client.remove_trait):
        with pytest.raises(NotFound):
            call(UNKNOWN, "CUSTOM_GPU")


def test_listings_and_inspection_data(lab: Lab) -> None:
    node = lab.enroll()
    enrolled = [n for n in lab.client.iter_nodes(provision_state="enroll") if n.uuid == node.uuid]
    assert enrolled == [node]
    assert node.uuid not in {n.uuid for n in lab.client.iter_nodes(provision_state="manageable")}
    # Asked for some fields, a listing fills only those (and the identifiers).
    (named,) = [n for n in lab.client.iter_nodes(fields=["name"]) if n.uuid == node.uuid]
    assert named == IronicNode.from_ironic({"uuid": node.uuid, "name": node.name})
    # never inspected by Ironic: no data, and not among the inspected ones
    assert lab.client.get_inventory(node.uuid) is None
    assert node.uuid not in {found for found, _ in lab.client.inspected_since(None)}


def test_ports_changed_since_a_moment_are_listed_by_ironics_timestamps(lab: Lab) -> None:
    # Other tests may change ports meanwhile: only this test's ports are looked for.
    before = lab.client.last_port_change() or datetime.min
    node = lab.enroll(macs=2)
    kept, touched = lab.client.list_ports(node.uuid)
    lab.client.update_port(touched.uuid, [{"op": "add", "path": "/extra/by", "value": "us"}])
    after = lab.client.last_port_change()
    assert after is not None and after >= before
    for page_size in (50, 1):  # one page, and Ironic's marker paging over the sort
        changed = lab.client.changed_ports(before, page_size=page_size)
        assert changed is not None
        stamps: dict[str, list[datetime]] = {}
        for port, stamp in changed:
            assert stamp >= before
            stamps.setdefault(port.uuid, []).append(stamp)
        ours = {p.uuid: p for p, _ in changed if p.uuid in (kept.uuid, touched.uuid)}
        assert {(p.node_uuid, p.address) for p in ours.values()} == {
            (node.uuid, kept.address),
            (node.uuid, touched.address),
        }
        assert len(stamps[kept.uuid]) == 1  # its creation; never updated
        created, updated = stamps[touched.uuid]  # its creation, then its update
        assert created < updated <= after
    later = lab.client.changed_ports(after) or []
    assert kept.uuid not in {port.uuid for port, _ in later}  # older than `after`
    lab.client.delete_port(touched.uuid)
    assert touched.uuid not in {p.uuid for p, _ in lab.client.changed_ports(before) or []}
