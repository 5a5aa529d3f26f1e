"""firewall.demand: the workers announce only while a host with a real driver has
stamped the marker recently; what they read is kept for a few seconds; a store they
cannot read makes them announce."""

import datetime

import pytest

from inspector import errors
from inspector.broker import channels
from inspector.firewall import demand
from inspector.store import Store, default_url, schema

T0 = datetime.datetime(2026, 11, 23, 4, 0, 0)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Wall:
    """The store's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture
def wall():
    return Wall()


@pytest.fixture
def store(tmp_path, wall):
    url = default_url(tmp_path)
    schema.upgrade(url)
    db = Store.from_url(url, clock=wall)
    yield db
    db.close()


class Reads:
    """Counts the store's marker reads."""

    def __init__(self, store) -> None:
        self.store, self.count = store, 0
        self.clock = store.clock

    def mark(self, name):
        self.count += 1
        return self.store.mark(name)


def test_no_stamp_no_announcement(store):
    assert not demand.Demand(store)()


def test_a_fresh_stamp_is_wanted_a_stale_one_not(store, wall):
    clock = Clock()
    wanted = demand.Demand(store, clock=clock)
    demand.Stamper(store, "host1")()
    assert wanted()
    wall.now += datetime.timedelta(seconds=demand.FRESH + 1)
    clock.now += demand.CHECK_PERIOD
    assert not wanted()


def test_what_was_read_is_kept_for_the_check_period(store):
    clock, reads = Clock(), Reads(store)
    wanted = demand.Demand(reads, clock=clock)
    assert not wanted()
    demand.Stamper(store, "host1")()
    clock.now += demand.CHECK_PERIOD / 2
    assert not wanted()  # kept
    assert reads.count == 1
    clock.now += demand.CHECK_PERIOD / 2
    assert wanted()  # read again
    assert reads.count == 2


class Broken:
    def clock(self):
        return T0

    def mark(self, name):
        raise errors.ServiceUnavailable("database down")

    def stamp(self, name, holder):
        raise errors.ServiceUnavailable("database down")


def test_a_store_that_cannot_be_read_means_announce():
    assert demand.Demand(Broken())()


def test_the_first_stamper_waits_for_the_announcers_the_next_not(store, wall):
    assert demand.Stamper(store, "host1").first() == demand.CHECK_PERIOD + 0.5
    assert demand.Stamper(store, "host2").first() == 0.0
    assert store.mark(demand.MARKER).holder == "host2"
    wall.now += datetime.timedelta(seconds=demand.FRESH + 1)
    assert demand.Stamper(store, "host3").first() == demand.CHECK_PERIOD + 0.5
    # A store that cannot be written: nothing to wait for (polling covers).
    assert demand.Stamper(Broken(), "host4").first() == 0.0
    demand.Stamper(Broken(), "host4")()  # logged, not raised


def test_the_announcer_publishes_only_when_wanted(store):
    heard = []

    class Recording(channels.Channel):
        def publish(self, event_type, payload):
            heard.append(event_type)

    clock = Clock()
    announcer = channels.Announcer(Recording(), wanted=demand.Demand(store, clock=clock))
    announcer.introspection_started("node-1", ["52:54:00:00:00:01"])
    announcer.introspection_ended("node-1")
    assert heard == []
    demand.Stamper(store, "host1")()
    clock.now += demand.CHECK_PERIOD
    announcer.introspection_started("node-1", ["52:54:00:00:00:01"])
    announcer.introspection_ended("node-1")
    announcer.port_added("port-1", "52:54:00:00:00:02")
    announcer.port_removed("port-1", "52:54:00:00:00:02")
    assert heard == [
        channels.INTROSPECTION_STARTED,
        channels.INTROSPECTION_ENDED,
        channels.PORT_ADDED,
        channels.PORT_REMOVED,
    ]
