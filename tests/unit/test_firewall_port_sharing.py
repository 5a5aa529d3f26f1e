"""One listing of Ironic's ports per period for the whole cluster: the firewall leader
lists and shares it on the channel, followers take it instead of listing, list by
themselves when it stops coming, and a follower elected opens with ports no older than
one period. Between two full listings (every full_port_listing_period), the leader lists
only the ports changed since the last one, unless Ironic's notifications flow."""

import datetime
import time

import pytest

from inspector.broker.announcements import PORTS
from inspector.firewall.ironic_listing import PortListing
from inspector.firewall.ironic_source import IronicInspections
from inspector.firewall.lists import MacList
from tests.fakes.ironic import FakeIronic
from tests.unit.test_firewall_ironic_source import MAC_A, MAC_B, MAC_C, A, Clock

PERIOD = 15.0


class Host:
    """One process's view and port listing, leading or not, sharing into `shared`."""

    def __init__(
        self, ironic: FakeIronic, clock: Clock, shared: list, full_period: float = 0.0
    ) -> None:
        self.leader = False
        self.notified = False
        self.view = IronicInspections(
            MacList("whitelist", clock=clock), MacList("blacklist", clock=clock)
        )
        self.ports = PortListing(
            self.view,
            ironic,
            period=PERIOD,
            full_period=full_period,
            leading=lambda: self.leader,
            notified=lambda: self.notified,
            share=lambda event_type, payload: shared.append((event_type, payload)),
        )


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def ironic():
    ironic = FakeIronic()
    ironic.add_port(ironic.add_node(uuid=A).uuid, MAC_A)
    return ironic


def listed_and_heard(ironic: FakeIronic, clock: Clock) -> tuple[Host, Host, list]:
    """A leader that listed the ports and shared them, a follower that heard it."""
    shared: list = []
    leader, follower = Host(ironic, clock, shared), Host(ironic, clock, shared)
    leader.leader = True
    leader.ports()
    follower.ports.hear(*shared[-1])
    return leader, follower, shared


def listings(ironic: FakeIronic) -> int:
    return len(ironic.calls_to("iter_ports"))


def test_the_leader_lists_and_shares_followers_take_it_without_listing(ironic, clock):
    shared: list = []
    leader, follower = Host(ironic, clock, shared), Host(ironic, clock, shared)
    leader.leader = True
    leader.ports()
    ((event_type, payload),) = shared
    assert event_type == PORTS and abs(payload["listed_at"] - time.time()) < 5
    follower.ports.hear(event_type, payload)
    assert follower.view.blacklist.macs() == {MAC_A}
    clock.now += PERIOD
    follower.ports()  # its own turn: the leader's listing is recent, no listing
    assert listings(ironic) == 1 and follower.ports.listings == 0
    leader.ports.hear(event_type, payload)  # its own, heard back: nothing to take
    assert leader.ports.listings == 1


def test_a_follower_lists_by_itself_when_the_leaders_listings_stop(ironic, clock):
    _, follower, shared = listed_and_heard(ironic, clock)
    clock.now += 2 * PERIOD + 0.1  # the leader died, or the channel is down
    ironic.add_port(A, MAC_B)
    follower.ports()
    assert follower.ports.listings == 1 and follower.view.blacklist.macs() == {MAC_A, MAC_B}
    assert len(shared) == 1  # a follower shares nothing


def test_an_elected_follower_lists_first_only_if_its_ports_are_older_than_a_period(ironic, clock):
    _, follower, _ = listed_and_heard(ironic, clock)
    clock.now += PERIOD
    assert not follower.ports.ensure() and follower.ports.listings == 0
    clock.now += 0.1
    ironic.add_port(A, MAC_B)
    assert follower.ports.ensure()  # older than one period: listed before opening
    assert follower.ports.listings == 1 and MAC_B in follower.view.blacklist.macs()


def test_a_change_heard_after_the_leader_listed_wins_over_its_listing(ironic, clock):
    shared: list = []
    leader, follower = Host(ironic, clock, shared), Host(ironic, clock, shared)
    leader.leader = True
    leader.ports()
    event_type, payload = shared[-1]
    payload = {**payload, "listed_at": payload["listed_at"] - 2}  # 2 s in transit
    clock.now += 2
    deleted = {"ironic_object.data": {"uuid": next(iter(payload["ports"])), "node_uuid": A}}
    clock.now -= 1  # the port's deletion heard 1 s after the leader listed
    follower.view.hear("baremetal.port.delete.end", deleted)
    clock.now += 1
    follower.ports.hear(event_type, payload)
    assert follower.view.blacklist.macs() == set()


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"ports": "every"},
        {"ports": None},
        {"ports": {"p": ["node"]}},
        {"ports": {}, "listed_at": "soon"},
        {"ports": {}, "full_at": [1]},
    ],
)
def test_a_malformed_listing_is_ignored(ironic, clock, payload):
    follower = Host(ironic, clock, [])
    follower.ports.hear(PORTS, payload)
    assert not follower.view.has_ports


def test_the_leaders_reconciles_leave_the_port_listing_to_its_own_turn(ironic, clock):
    leader, _, _ = listed_and_heard(ironic, clock)
    clock.now += 3 * PERIOD  # its turn is late: a listing of 10,000 ports takes seconds
    assert not leader.ports.ensure() and leader.ports.listings == 1


FULL = 600.0


def full_and_changes(ironic: FakeIronic) -> tuple[int, int]:
    return len(ironic.calls_to("iter_ports")), len(ironic.calls_to("changed_ports"))


def leading(ironic: FakeIronic, clock: Clock, shared: list) -> Host:
    """A leader listing changes between full listings, after its first (full) turn."""
    leader = Host(ironic, clock, shared, full_period=FULL)
    leader.leader = True
    leader.ports()
    return leader


def test_between_full_listings_the_leader_lists_only_changed_ports_and_shares_them(ironic, clock):
    shared: list = []
    leader = leading(ironic, clock, shared)
    follower = Host(ironic, clock, shared, full_period=FULL)
    port_a = next(iter(ironic.ports))
    ironic.add_port(A, MAC_B)
    ironic.update_port(port_a, [{"op": "replace", "path": "/address", "value": MAC_C}])
    clock.now += PERIOD
    assert leader.ports()  # the lists changed
    assert full_and_changes(ironic) == (1, 1)
    assert leader.view.blacklist.macs() == {MAC_B, MAC_C}
    follower.ports.hear(*shared[-1])
    assert follower.view.blacklist.macs() == {MAC_B, MAC_C}
    clock.now += PERIOD
    assert not leader.ports() and full_and_changes(ironic) == (1, 2)  # nothing new
    assert len(shared) == 3  # one share per turn


def test_a_deleted_ports_mac_stays_denied_until_the_next_full_listing(ironic, clock):
    leader = leading(ironic, clock, [])
    ironic.delete_port(next(iter(ironic.ports)))
    clock.now += PERIOD
    leader.ports()
    assert leader.view.blacklist.macs() == {MAC_A}  # a listing of changes sees no deletion
    clock.now += FULL
    assert leader.ports() and leader.view.blacklist.macs() == set()
    assert full_and_changes(ironic) == (2, 1)


def test_a_change_committed_with_an_older_stamp_is_still_found(ironic, clock):
    leader = leading(ironic, clock, [])
    newest = ironic.last_port_change()
    assert newest is not None
    ironic.now = lambda: newest - datetime.timedelta(seconds=30)  # stamped, committed late
    ironic.add_port(A, MAC_B)
    clock.now += PERIOD
    leader.ports()
    assert MAC_B in leader.view.blacklist.macs()


def test_while_notifications_flow_the_leader_lists_no_changes_but_still_shares(ironic, clock):
    shared: list = []
    leader = leading(ironic, clock, shared)
    leader.notified = True
    clock.now += PERIOD
    leader.ports()
    assert full_and_changes(ironic) == (1, 0) and len(shared) == 2
    clock.now += FULL  # a full listing is due all the same: it alone sees deletions
    leader.ports()
    assert full_and_changes(ironic) == (2, 0)


def test_an_elected_follower_lists_fully_only_if_the_leaders_full_listing_is_old(ironic, clock):
    shared: list = []
    leading(ironic, clock, shared)
    follower = Host(ironic, clock, shared, full_period=FULL)
    follower.ports.hear(*shared[-1])
    clock.now += PERIOD + 0.1
    ironic.add_port(A, MAC_B)
    assert follower.ports.ensure()  # its ports are a period old: the changes listed
    assert full_and_changes(ironic) == (1, 1) and MAC_B in follower.view.blacklist.macs()
    stale = {**shared[-1][1], "full_at": time.time() - FULL - 1}
    follower.ports.hear(PORTS, stale)
    follower.ports.ensure()  # its ports are fresh, but the leader's full listing is old:
    assert full_and_changes(ironic) == (2, 1)  # listed fully before opening


class UnsortedIronic(FakeIronic):
    """Ironic on a database sorting never-updated ports first."""

    def changed_ports(self, since, *, page_size=50):
        super().changed_ports(since, page_size=page_size)
        return None


def test_where_ironic_cannot_sort_by_change_every_listing_is_a_full_one(clock):
    ironic = UnsortedIronic()
    ironic.add_port(ironic.add_node(uuid=A).uuid, MAC_A)
    leader = leading(ironic, clock, [])
    for _ in range(2):
        clock.now += PERIOD
        leader.ports()
    assert full_and_changes(ironic) == (3, 1)  # asked once, then never again


def test_a_burst_of_changes_is_read_again_for_skew_seconds_not_until_the_next_change(clock):
    ironic = FakeIronic()
    burst = datetime.datetime(2026, 1, 1, 10, 0, 0)
    ironic.now = lambda: burst  # 3 ports created in one moment, nothing after
    for mac in (MAC_A, MAC_B, MAC_C):
        ironic.add_port(ironic.add_node().uuid, mac)
    wall = [burst + datetime.timedelta(seconds=10)]
    view = IronicInspections(MacList("whitelist", clock=clock), MacList("blacklist", clock=clock))
    leader = PortListing(view, ironic, period=PERIOD, full_period=FULL, utcnow=lambda: wall[0])
    leader()
    found = []
    for seconds in (25, 100, 115):  # each listing reaches SKEW before the last one began
        wall[0] = burst + datetime.timedelta(seconds=seconds)
        clock.now += PERIOD
        leader()
        found.append(len(ironic.changed_ports(ironic.calls_to("changed_ports")[-1].args[0])))
    assert found == [3, 3, 0] and leader.deltas == 3
