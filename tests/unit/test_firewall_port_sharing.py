"""One listing of every Ironic port per period for the whole cluster: the firewall
leader lists and shares it on the channel, followers take it instead of listing, list
by themselves when it stops coming, and a follower elected opens with ports no older
than one period."""

import time

import pytest

from inspector.broker.announcements import PORTS
from inspector.firewall.ironic_listing import PortListing
from inspector.firewall.ironic_source import IronicInspections
from inspector.firewall.sources import MacList
from tests.fakes.ironic import FakeIronic
from tests.unit.test_firewall_ironic_source import MAC_A, MAC_B, A, Clock

PERIOD = 15.0


class Host:
    """One process's view and port listing, leading or not, sharing into `shared`."""

    def __init__(self, ironic: FakeIronic, clock: Clock, shared: list) -> None:
        self.leader = False
        self.view = IronicInspections(
            MacList("whitelist", clock=clock), MacList("blacklist", clock=clock)
        )
        self.ports = PortListing(
            self.view,
            ironic,
            period=PERIOD,
            leading=lambda: self.leader,
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
    follower.view("baremetal.port.delete.end", deleted)
    clock.now += 1
    follower.ports.hear(event_type, payload)
    assert follower.view.blacklist.macs() == set()


@pytest.mark.parametrize("payload", [{}, {"ports": "every"}, {"ports": None}])
def test_a_malformed_listing_is_ignored(ironic, clock, payload):
    follower = Host(ironic, clock, [])
    follower.ports.hear(PORTS, payload)
    assert not follower.view.has_ports


def test_the_leaders_reconciles_leave_the_port_listing_to_its_own_turn(ironic, clock):
    leader, _, _ = listed_and_heard(ironic, clock)
    clock.now += 3 * PERIOD  # its turn is late: a listing of 10,000 ports takes seconds
    assert not leader.ports.ensure() and leader.ports.listings == 1
