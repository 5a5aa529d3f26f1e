"""wiring.start_firewall: which source feeds the PXE firewall (firewall.choice's table,
one entry per [pxe_filter] whitelist_source, each refusing to start without what it
reads). With the noop driver no poll does (nothing would use them: no listing of every
Ironic port each period), and the process does not run for the firewall's leadership;
the channel still brings status requests. A real driver stamps that its host applies the
workers' announcements, and the first to do so waits for the announcers to read it."""

import re
import types

import pytest

from inspector.cmd import wiring
from inspector.conf import pxe_filter
from inspector.errors import ConfigError
from inspector.firewall import choice, demand
from inspector.store import Store, default_url, schema


class Firewall:
    def __init__(self, driver: str) -> None:
        self.driver = types.SimpleNamespace(name=driver)
        self.whitelist, self.blacklist = "whitelist", "blacklist"
        self.watched: list[tuple[str, str]] = []
        self.listened = []
        self.started = False

    def watch(self, target, source, period, *, outages, service) -> None:
        self.watched.append((target, service))

    def listen(self, channel) -> None:
        self.listened.append(channel)

    def stamp_every(self, stamp, period) -> None:
        self.stamps = (stamp, period)

    def start(self) -> None:
        self.started = True


class Election:
    started = False

    def start(self) -> None:
        self.started = True


@pytest.mark.parametrize(
    ("driver", "watched", "listened"),
    [
        ("nftables", [("whitelist", "database"), ("blacklist", "Ironic")], ["channel"]),
        ("noop", [], ["channel"]),
    ],
)
def test_sources_by_driver(conf, store, driver, watched, listened):
    firewall, election = Firewall(driver), Election()
    start(conf, firewall, election, store)
    assert firewall.watched == watched
    assert firewall.listened == listened
    assert firewall.started
    # A noop leader would keep the PXE service of every host with a real driver closed.
    assert election.started == (driver != "noop")


class Shutdown:
    def __init__(self, waits) -> None:
        self.waits = waits

    def wait(self, seconds) -> bool:
        self.waits.append(seconds)
        return False


@pytest.fixture
def store(tmp_path):
    url = default_url(tmp_path)
    schema.upgrade(url)
    db = Store.from_url(url)
    yield db
    db.close()


def start(conf, firewall, election, store, channel="channel", meanwhile=None):
    """The waits start_firewall made (and, in order among them, `meanwhile`'s calls)."""
    waits: list = []
    lifecycle = types.SimpleNamespace(shutdown=Shutdown(waits))
    wiring.start_firewall(
        conf,
        firewall,
        election,
        db=store,
        ironic=object(),
        channel=channel,
        budget=None,
        lifecycle=lifecycle,
        meanwhile=None if meanwhile is None else lambda: meanwhile(waits),
    )
    return waits


def test_a_real_driver_stamps_and_the_first_waits_for_the_announcers(conf, store):
    first = Firewall("nftables")
    assert start(conf, first, Election(), store) == [demand.CHECK_PERIOD + 0.5]
    assert store.mark(demand.MARKER).holder == conf.host
    stamper, period = first.stamps
    assert period == demand.STAMP_PERIOD
    term = store.mark(demand.MARKER).term
    stamper()
    assert store.mark(demand.MARKER).term == term + 1
    # Another host with a real driver, the stamp still fresh: no wait.
    assert start(conf, Firewall("iptables"), Election(), store) == []
    assert demand.Demand(store)()


def test_noop_and_no_channel_stamp_nothing(conf, store):
    for firewall, channel in ((Firewall("noop"), "channel"), (Firewall("nftables"), None)):
        assert start(conf, firewall, Election(), store, channel=channel) == []
        assert not hasattr(firewall, "stamps")
    assert store.mark(demand.MARKER) is None
    assert not demand.Demand(store)()


def test_what_else_the_process_starts_does_not_wait_for_the_announcers(conf, store):
    """A worker's pool takes work at once; only the firewall's election waits."""
    election = Election()
    waits = start(conf, Firewall("nftables"), election, store, meanwhile=lambda w: w.append("pool"))
    assert waits == ["pool", demand.CHECK_PERIOD + 0.5]
    assert election.started


def test_each_whitelist_source_is_a_name_of_the_table(conf):
    option = next(o for o in pxe_filter.OPTS if o.dest == "whitelist_source")
    assert sorted(option.type.choices) == sorted(choice.SOURCES)


@pytest.mark.parametrize(
    ("source", "lacking", "message"),
    [
        ("inspector", "db", "whitelist_source = inspector needs the [database]"),
        ("ironic", "ironic", "whitelist_source = ironic needs Ironic"),
    ],
)
def test_a_source_refuses_to_start_without_its_backend(conf, store, source, lacking, message):
    conf.set_override("whitelist_source", source, group="pxe_filter")
    firewall, election = Firewall("nftables"), Election()
    backends = {"db": store, "ironic": object(), "channel": None}
    with pytest.raises(ConfigError, match=re.escape(message)):
        wiring.start_firewall(
            conf,
            firewall,
            election,
            **{**backends, lacking: None},
            budget=None,
            lifecycle=types.SimpleNamespace(shutdown=Shutdown([])),
        )
    assert firewall.watched == [] and not firewall.started and not election.started
