"""The firewall's lists from Ironic's own inspections ([pxe_filter] whitelist_source =
ironic): the reconcile's requests (paginated, fields-limited listings, never a call per
node), the inspection states and interfaces, Ironic's notifications, unknown MACs as
ironic-pxe-filter treats them, and the manager opening with them."""

import threading

import pytest

from inspector.broker.channels import LocalChannel
from inspector.errors import ServiceUnavailable
from inspector.firewall import ironic_listing, ironic_source
from inspector.firewall.ironic_listing import Snapshot, reconcile
from inspector.firewall.ironic_source import IronicInspections
from inspector.firewall.lists import PROVISION_SET, MacList
from inspector.ironic import Ironic
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from tests.fakes.dlm import FakeDLM
from tests.fakes.ironic import FakeIronic
from tests.integration.cluster import wait_for
from tests.unit.test_firewall_manager import Host, Log
from tests.unit.test_ironic import FakeConnection, response

A, B, C = (f"{n}{n}{n}{n}{n}{n}{n}{n}-0000-0000-0000-000000000000" for n in "abc")
MAC_A, MAC_A2, MAC_B, MAC_C = (
    "52:54:00:00:00:0a",
    "52:54:00:00:00:2a",
    "52:54:00:00:00:0b",
    "52:54:00:00:00:0c",
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def view(clock):
    changes = []
    inspections = IronicInspections(
        MacList("whitelist", clock=clock),
        MacList("blacklist", clock=clock),
        interfaces=["agent"],
        on_change=lambda: changes.append(1),
    )
    inspections.changes = changes
    return inspections


def snapshot(inspecting=(), **ports):
    """Snapshot(inspecting, {port: (node, mac)}) with port names as keywords."""
    return Snapshot(frozenset(inspecting), dict(ports))


def notification(**data):
    return {"ironic_object.data": data}


# The reconcile's requests, through the real client.


def _connection_for_a_reconcile(first_port_listing: bool) -> tuple[FakeConnection, list]:
    def nodes(*pairs):
        return response(200, {"nodes": [{"uuid": u, "inspect_interface": i} for u, i in pairs]})

    ports = [
        {"uuid": f"p{i}", "node_uuid": A, "address": f"52:54:00:00:01:{i:02x}"} for i in (1, 2)
    ]
    replies = [
        response(200, {"ports": ports[:1], "next": "http://ironic/v1/ports?marker=p1"}),
        response(200, {"ports": ports[1:]}),
    ]
    replies = replies if first_port_listing else []
    replies += [nodes((A, "agent"), (B, "redfish")), nodes((C, "agent"))]
    return FakeConnection(*replies), ports


NODE_FIELDS = {
    "fields": "uuid,inspect_interface,provision_updated_at",
    "limit": ironic_listing.PAGE,
}
PORT_FIELDS = {"fields": "uuid,node_uuid,address", "limit": ironic_listing.PAGE}
NODE_LISTINGS = [
    ("get", "/nodes", {"provision_state": "inspect wait", **NODE_FIELDS}),
    ("get", "/nodes", {"provision_state": "inspecting", **NODE_FIELDS}),
]


def test_reconcile_lists_both_inspection_states_filtered_by_ironic(conf):
    connection, _ = _connection_for_a_reconcile(first_port_listing=False)
    found = reconcile(Ironic(conf, connection=connection), ["agent"])()
    assert found.inspecting == {A, C}  # B inspects out of band: not ours to let boot
    assert found.ports is None
    requests = [(method, path, sent["params"]) for method, (path,), sent in connection.requests]
    assert requests == NODE_LISTINGS


def test_a_process_that_never_listed_the_ports_lists_them_in_pages_before_the_nodes(conf, view):
    connection, ports = _connection_for_a_reconcile(first_port_listing=True)
    ironic = Ironic(conf, connection=connection)
    listing = ironic_listing.PortListing(view, ironic)
    found = reconcile(ironic, ["agent"], ports=listing)()
    view.replace(found, started=0)
    assert view.has_ports
    assert view.blacklist.macs() == {p["address"] for p in ports}
    assert view.whitelist.macs() == {p["address"] for p in ports}  # A is under inspection
    requests = [(method, path, sent["params"]) for method, (path,), sent in connection.requests]
    assert requests == [
        ("get", "/ports", PORT_FIELDS),
        ("get", "/ports", {**PORT_FIELDS, "marker": "p1"}),
        *NODE_LISTINGS,
    ]
    assert view.changes  # the first listing woke the firewall


def test_reconcile_makes_the_same_few_calls_whatever_the_number_of_nodes(view):
    ironic = FakeIronic()
    for index in range(300):
        node = ironic.add_node(provision_state="inspect wait" if index % 2 else "manageable")
        ironic.add_port(node.uuid, f"52:54:00:00:{index // 256:02x}:{index % 256:02x}")
    fetch = reconcile(ironic, ["agent"], ports=ironic_listing.PortListing(view, ironic))
    found = fetch()
    assert len(found.inspecting) == 150 and len(view.blacklist.macs()) == 300
    assert [call.name for call in ironic.history] == ["iter_ports", "iter_nodes", "iter_nodes"]
    # Once the ports are known, a reconcile lists the nodes under inspection alone.
    fetch()
    assert [call.name for call in ironic.history[3:]] == ["iter_nodes", "iter_nodes"]


class BlockingIronic(FakeIronic):
    """A FakeIronic whose port listings wait for `go` once `block` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.block = threading.Event()
        self.listing = threading.Event()
        self.go = threading.Event()

    def iter_ports(self, **kwargs):
        if self.block.is_set():
            self.listing.set()
            assert self.go.wait(10)
        return super().iter_ports(**kwargs)


def test_a_port_listing_in_flight_delays_no_later_reconcile_of_the_nodes(view):
    ironic = BlockingIronic()
    ironic.add_port(ironic.add_node(uuid=A, provision_state="inspect wait").uuid, MAC_A)
    listing = ironic_listing.PortListing(view, ironic)
    fetch = reconcile(ironic, ["agent"], ports=listing)
    view.replace(fetch(), started=0)
    ironic.block.set()
    slow = threading.Thread(target=listing)
    slow.start()
    try:
        assert ironic.listing.wait(10)
        assert fetch().inspecting == {A}  # did not wait for the port listing
    finally:
        ironic.go.set()
        slow.join(10)
    assert [call.name for call in ironic.history] == [
        "iter_ports",
        *["iter_nodes"] * 4,
        "iter_ports",
    ]


def test_a_new_leader_waits_for_the_first_port_listing_in_flight_instead_of_another(view):
    ironic = BlockingIronic()
    ironic.add_port(ironic.add_node(uuid=A, provision_state="inspecting").uuid, MAC_A)
    ironic.block.set()
    listing = ironic_listing.PortListing(view, ironic)
    first = threading.Thread(target=listing)
    first.start()
    assert ironic.listing.wait(10)
    result = []
    election = threading.Thread(
        target=lambda: result.append(reconcile(ironic, ["agent"], ports=listing)())
    )
    election.start()
    election.join(0.2)  # (a bound, not a sleep: the reconcile must still be waiting)
    assert election.is_alive() and not result
    ironic.go.set()
    first.join(10)
    election.join(10)
    assert result[0].inspecting == {A} and view.blacklist.macs() == {MAC_A}
    assert [call.name for call in ironic.history] == ["iter_ports", "iter_nodes", "iter_nodes"]


@pytest.mark.parametrize("listing", ["nodes", "ports"])
def test_ironic_given_up_by_its_client_stops_the_process(view, listing):
    ironic = FakeIronic()
    ironic.fail_next()
    lifecycle = Lifecycle()
    outages = Outages(lifecycle, {"Ironic": RetryPolicy(3, 1.0)})
    fetch = (
        reconcile(ironic, ["agent"], outages)
        if listing == "nodes"
        else ironic_listing.PortListing(view, ironic, outages)
    )
    with pytest.raises(ServiceUnavailable):
        fetch()
    # The client already retried within the budget: no second round.
    assert lifecycle.shutdown.is_set() and lifecycle.exit_status == 1
    assert "gave up on Ironic" in lifecycle.reason


# The lists and the unknown MACs.


def test_the_ports_of_nodes_under_inspection_are_whitelisted_every_port_blacklisted(view):
    assert view.replace(
        snapshot([A], p1=(A, MAC_A), p2=(A, MAC_A2), p3=(B, MAC_B)), started=view.clock()
    )
    assert view.whitelist.macs() == {MAC_A, MAC_A2}
    assert view.blacklist.macs() == {MAC_A, MAC_A2, MAC_B}
    assert view.inspecting() == {A}


def test_unknown_macs_boot_only_while_a_node_is_under_inspection_or_discovery_is_on(view):
    assert not view.allows_unknown()
    # A node under inspection without any port yet still opens the door to unknown MACs:
    # the NIC it boots from may not be enrolled.
    assert view.replace(snapshot([C]), started=view.clock())
    assert view.allows_unknown() and view.whitelist.macs() == set()
    assert view.replace(snapshot([]), started=view.clock())
    assert not view.allows_unknown()
    view.discovery = True
    assert view.allows_unknown()


def test_a_reconcile_without_ports_keeps_the_known_ones(view):
    view.replace(snapshot([], p1=(A, MAC_A), p3=(B, MAC_B)), started=view.clock())
    assert view.replace(Snapshot(frozenset([A]), None), started=view.clock())
    assert view.whitelist.macs() == {MAC_A}
    assert view.blacklist.macs() == {MAC_A, MAC_B}


def test_an_unchanged_reconcile_changes_nothing(view):
    assert view.replace(snapshot([A], p1=(A, MAC_A)), started=view.clock())
    assert not view.replace(snapshot([A], p1=(A, MAC_A)), started=view.clock())


# Ironic's notifications.


def test_a_node_entering_and_leaving_inspection_is_allowed_then_denied(view):
    view.replace(snapshot([], p1=(A, MAC_A), p3=(B, MAC_B)), started=view.clock())
    node = {"uuid": A, "inspect_interface": "agent"}
    changes = [
        view.hear(PROVISION_SET + "start", notification(**node, provision_state="inspecting"))
    ]
    assert view.whitelist.macs() == {MAC_A} and view.allows_unknown()
    changes.append(
        view.hear(PROVISION_SET + "success", notification(**node, provision_state="inspect wait"))
    )
    assert view.whitelist.macs() == {MAC_A}
    changes.append(
        view.hear(PROVISION_SET + "end", notification(**node, provision_state="manageable"))
    )
    assert view.whitelist.macs() == set() and not view.allows_unknown()
    assert view.blacklist.macs() == {MAC_A, MAC_B}
    assert changes == [True, False, True]  # allowed, then denied; the step between: nothing


def test_a_node_inspected_by_another_interface_is_not_allowed(view):
    view.replace(snapshot([], p1=(A, MAC_A)), started=view.clock())
    assert not view.hear(
        "baremetal.node.provision_set.end",
        notification(uuid=A, inspect_interface="redfish", provision_state="inspecting"),
    )
    assert view.whitelist.macs() == set()


def test_ports_created_updated_and_deleted_follow_their_node(view):
    view.replace(snapshot([A], p1=(A, MAC_A)), started=view.clock())
    view.hear("baremetal.port.create.end", notification(uuid="p2", node_uuid=A, address=MAC_A2))
    assert view.whitelist.macs() == {MAC_A, MAC_A2}
    # Moved to a node not under inspection: still known (blacklisted), no longer allowed.
    view.hear("baremetal.port.update.end", notification(uuid="p2", node_uuid=B, address=MAC_A2))
    assert view.whitelist.macs() == {MAC_A} and MAC_A2 in view.blacklist.macs()
    view.hear("baremetal.port.delete.end", notification(uuid="p1", node_uuid=A, address=MAC_A))
    assert view.whitelist.macs() == set() and view.blacklist.macs() == {MAC_A2}
    assert view.allows_unknown()  # A is still under inspection


def test_a_deleted_node_takes_its_ports_along(view):
    view.replace(snapshot([A], p1=(A, MAC_A), p3=(B, MAC_B)), started=view.clock())
    view.hear("baremetal.node.delete.end", notification(uuid=A, provision_state="inspect wait"))
    assert view.whitelist.macs() == set() and view.blacklist.macs() == {MAC_B}
    assert not view.allows_unknown()


def test_other_notifications_and_malformed_payloads_are_ignored(view):
    assert not view.hear(
        "baremetal.node.power_set.end", notification(uuid=A, provision_state="inspecting")
    )
    assert not view.hear("baremetal.node.provision_set.end", {"ironic_object.data": "garbage"})
    assert not view.hear("inspector.introspection.start", {"node_uuid": A, "macs": [MAC_A]})
    assert view.whitelist.macs() == set()


def test_a_change_heard_after_a_reconcile_began_wins_over_its_snapshot(view, clock):
    started = clock()
    clock.now += 1
    view.hear(
        "baremetal.node.provision_set.start",
        notification(uuid=A, inspect_interface="agent", provision_state="inspecting"),
    )
    view.hear("baremetal.port.create.end", notification(uuid="p1", node_uuid=A, address=MAC_A))
    # The reconcile read Ironic before both: neither the node nor its port.
    view.replace(snapshot([]), started=started)
    assert view.whitelist.macs() == {MAC_A} and view.inspecting() == {A}
    # A later reconcile is newer than the notifications.
    clock.now += 1
    view.replace(snapshot([]), started=clock())
    assert view.whitelist.macs() == set() and not view.allows_unknown()


# With the manager: the leader opens with Ironic's inspections.


def test_ironic_notifications_reach_the_view_once_through_the_managers_feed(conf):
    host = Host(FakeDLM(), "host", Log())
    channel = LocalChannel()
    view = ironic_source.attach(host.manager, FakeIronic(), conf, channel)
    host.manager.listen(channel)
    view.replace(snapshot([A], p1=(A, MAC_A)), started=view.clock())
    heard, hear = [], view.hear
    view.hear = lambda event_type, payload: heard.append(event_type) or hear(event_type, payload)
    port = notification(uuid="p2", node_uuid=A, address=MAC_A2)
    channel.deliver("baremetal.port.create.end", port)
    assert heard == ["baremetal.port.create.end"]
    assert view.whitelist.macs() == {MAC_A, MAC_A2} and MAC_A2 in view.blacklist.macs()


def test_the_leader_opens_for_ironic_inspections_and_unknown_macs_follow_them(conf):
    ironic = FakeIronic()
    node = ironic.add_node(uuid=A, provision_state="inspect wait")
    ironic.add_port(node.uuid, MAC_A)
    ironic.add_port(ironic.add_node(uuid=B).uuid, MAC_B)
    conf.set_override("whitelist_sync_period", 0.05, group="firewall")
    conf.set_override("blacklist_sync_period", 0.05, group="firewall")
    host = Host(FakeDLM(), "host", Log())
    view = ironic_source.attach(host.manager, ironic, conf)
    assert host.manager.source is view  # it hears Ironic's notifications, rules on unknown MACs
    host.start()
    try:
        rules = wait_for(
            lambda: (r := host.driver.state) is not None and r.open and r.whitelist and r,
            5,
            0.01,
            "the leader open with the inspected node",
        )
        assert rules.whitelist == {MAC_A} and MAC_B in rules.blacklist
        assert not rules.deny_unknown  # a node under inspection: unknown MACs boot
        ironic.nodes[A] = ironic.add_node(uuid=A, provision_state="manageable")
        rules = wait_for(
            lambda: (r := host.driver.state).open and not r.whitelist and r,
            5,
            0.01,
            "the node denied once its inspection is over",
        )
        assert rules.deny_unknown and MAC_A in rules.blacklist
    finally:
        host.stop()


def test_without_periods_the_leader_still_reconciles_once_when_elected(conf):
    ironic = FakeIronic()
    ironic.add_port(ironic.add_node(uuid=A, provision_state="inspecting").uuid, MAC_A)
    conf.set_override("whitelist_sync_period", 0, group="firewall")
    conf.set_override("blacklist_sync_period", 0, group="firewall")
    conf.set_override("inspection_poll_interval", 0, group="firewall")
    host = Host(FakeDLM(), "host", Log())
    ironic_source.attach(host.manager, ironic, conf)
    host.start()
    try:
        rules = wait_for(
            lambda: (r := host.driver.state) is not None and r.open and r,
            5,
            0.01,
            "the leader open",
        )
        assert rules.whitelist == {MAC_A}
        assert [call.name for call in ironic.history] == ["iter_ports", "iter_nodes", "iter_nodes"]
    finally:
        host.stop()
