"""The PXE firewall manager on a fake DLM with recording drivers: closed at start, open
only on the elected leader, closed before its lease is released (reset, shutdown, lost
DLM, errors), the expiry it hands the kernel, and the lists converging from the polls
or from the channel alone."""

import dataclasses
import itertools
import threading
import time

import pytest

from inspector.broker import channels
from inspector.broker.message import Request
from inspector.coordination.election import Election
from inspector.errors import ConfigError, FirewallError
from inspector.firewall import manager as firewall_manager
from inspector.firewall.drivers.base import Driver
from inspector.firewall.lists import MacList
from inspector.firewall.manager import FirewallManager
from inspector.firewall.ruleset import CLOSED
from inspector.firewall.sources import introspected_macs, ironic_ports
from inspector.firewall.status import Status, table
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from inspector.machine import Event, Machine, State
from inspector.store import NodeRecord
from inspector.worker.tasks import Tasks
from tests import seed
from tests.fakes.dlm import FakeDLM
from tests.fakes.ironic import FakeIronic
from tests.integration.cluster import wait_for

A, B, C = (f"52:54:00:00:00:0{i}" for i in range(1, 4))


class Log:
    """What every simulated host did, in one order: (host, "open"|"closed"|"release")."""

    def __init__(self):
        self.guard = threading.Lock()
        self.events = []

    def add(self, host, what):
        with self.guard:
            self.events.append((host, what))

    def of(self, host):
        with self.guard:
            return [what for who, what in self.events if who == host]

    def check(self):
        """Never two hosts open at once, and no lease released by an open host."""
        opened = set()
        with self.guard:
            for host, what in self.events:
                if what == "open":
                    opened.add(host)
                    assert len(opened) <= 1, f"two hosts open: {sorted(opened)}"
                elif what == "closed":
                    opened.discard(host)
                else:
                    assert host not in opened, f"{host} released its lease while open"


class RecordingDriver(Driver):
    """Keeps the applied rule set in memory and logs every change of openness."""

    name = "recording"
    expiry_resolution = 0.001

    def __init__(self, log=None, host="h"):
        super().__init__()
        self.log, self.host = log or Log(), host
        self.state = None
        self.applied = []
        self.checked = False
        #: How many of the next applies / closes fail.
        self.failing_applies = 0
        self.failing_closes = 0

    def check(self):
        self.checked = True

    def render(self, rules):
        return repr(rules)

    def _set(self, rules):
        if self.state is None or self.state.open != rules.open:
            self.log.add(self.host, "open" if rules.open else "closed")
        self.state = rules

    def _replace(self, rules):
        if self.failing_applies:
            self.failing_applies -= 1
            raise FirewallError("apply failed (test)")
        self._set(rules)
        self.applied.append(rules)

    def _close(self):
        if self.failing_closes:
            self.failing_closes -= 1
            raise FirewallError("close failed (test)")
        self._set(CLOSED)
        return CLOSED

    def is_open(self):
        state = self.state
        return state is not None and state.open


class Host:
    """One simulated worker process: its manager, recording driver, DLM member and
    firewall election; its lease's release is logged."""

    def __init__(self, dlm, name, log, **manager_options):
        self.name = name
        self.lifecycle = Lifecycle()
        self.driver = RecordingDriver(log, name)
        options = {"lease_seconds": dlm.lease_seconds, "refresh": 0.01, "retry_interval": 0.01}
        self.manager = FirewallManager(
            self.driver,
            self.lifecycle,
            deny_unknown=False,
            host=name,
            member=name,
            **{**options, **manager_options},
        )
        self.member = dlm.member(name)
        take = self.member.try_lease

        def try_lease(lease_name):
            lease = take(lease_name)
            if lease is not None:
                release = lease.release

                def logged_release():
                    log.add(name, "release")
                    release()

                lease.release = logged_release
            return lease

        self.member.try_lease = try_lease
        outages = Outages(self.lifecycle, {"DLM": RetryPolicy(1000, 0.01)})
        self.election = Election(
            self.member,
            firewall_manager.KIND,
            self.manager.lead,
            self.lifecycle,
            outages,
            interval=0.01,
        )

    def start(self):
        self.manager.close_at_start()
        self.manager.start()
        self.election.start()

    def stop(self):
        self.lifecycle.stop("test over")
        self.election.join(5)
        self.manager.stop()


@pytest.fixture
def log():
    return Log()


@pytest.fixture
def hosts(log):
    dlm = FakeDLM()
    started = [Host(dlm, f"host{i}", log) for i in range(3)]
    for host in started:
        host.start()
    yield started
    for host in started:
        host.stop()
    log.check()


def open_hosts(hosts):
    return [host for host in hosts if host.driver.is_open()]


def the_leader(hosts):
    return wait_for(lambda: open_hosts(hosts), 5, 0.01, "an open host")[0]


# Start-up and the leader.


def test_closed_at_start_before_anything_else(log):
    driver = RecordingDriver(log, "h")
    manager = FirewallManager(driver, Lifecycle(), deny_unknown=False)
    manager.close_at_start()
    assert driver.checked
    assert driver.state == CLOSED
    assert log.of("h") == ["closed"]
    assert driver.applied == []


def test_a_lease_too_short_for_the_driver_resolution_is_refused():
    driver = RecordingDriver()
    driver.expiry_resolution = 1.0  # iptables
    manager = FirewallManager(driver, Lifecycle(), deny_unknown=False, lease_seconds=2)
    with pytest.raises(ConfigError, match="lease_timeout = 2 s is too short"):
        manager.close_at_start()
    assert driver.state is None  # refused before touching anything
    FirewallManager(driver, Lifecycle(), deny_unknown=False, lease_seconds=3).close_at_start()


def test_only_the_leader_opens(hosts):
    leader = the_leader(hosts)
    for _ in range(50):
        assert open_hosts(hosts) == [leader]
        time.sleep(0.005)  # sampling the hosts, not waiting for a condition
    followers = [host for host in hosts if host is not leader]
    for host in followers:
        assert not host.manager.is_leader()
        assert host.driver.state is not None and not host.driver.state.open


def test_the_leader_hands_the_kernel_the_end_of_its_trust(hosts):
    leader = the_leader(hosts)
    leadership = leader.election.leadership
    first = leader.driver.state.open_until
    assert first is not None
    assert time.time() < first <= leadership.trusted_until()
    # Kept ahead by the renewals: later applies push it further.
    wait_for(lambda: leader.driver.state.open_until > first + 0.05, 5, 0.01, "a refresh")
    assert leader.driver.state.open_until <= leader.election.leadership.trusted_until()


def test_no_expiry_without_a_lease_or_a_driver_that_can_expire():
    lifecycle = Lifecycle()
    for resolution, lease in ((None, 3.0), (0.001, float("inf"))):
        driver = RecordingDriver()
        driver.expiry_resolution = resolution
        manager = FirewallManager(driver, lifecycle, deny_unknown=False, lease_seconds=lease)
        leadership = _leadership(lease)
        manager._leadership = leadership
        assert manager.desired().open
        assert manager.desired().open_until is None


def _leadership(lease):
    from inspector.coordination.election import Leadership  # noqa: PLC0415

    return Leadership("firewall", "me", 1, lease, time.monotonic())


def test_a_leadership_stale_before_it_opens_neither_opens_nor_says_so(log, caplog):
    """Frozen between the election and the open: the lease may be another's by now."""
    from inspector.coordination.election import Leadership  # noqa: PLC0415

    driver = RecordingDriver(log, "h")
    manager = FirewallManager(driver, Lifecycle(), deny_unknown=False, lease_seconds=3.0)
    manager.close_at_start()
    stale = Leadership("firewall", "me", 7, 3.0, time.monotonic() - 3.0)
    with caplog.at_level("INFO", logger="inspector.firewall.manager"):
        manager.lead(stale)
    assert "open" not in log.of("h")
    assert not manager.is_leader()
    assert "opening the PXE service" not in caplog.text
    assert "term 7 ended before the PXE service opened" in caplog.text


# Closing before the lease goes: reset, shutdown, lost DLM, errors.


def test_a_follower_dying_leaves_the_pxe_service_open(hosts, log):
    leader = the_leader(hosts)
    wait_for(lambda: all(len(h.election.members) == 3 for h in hosts), 5, 0.01, "all joined")
    opened = log.of(leader.name).count("open")
    other = next(host for host in hosts if host is not leader)
    other.member.is_cut = True  # cut off, then forgotten: the group shrank
    other.member.crash()
    wait_for(lambda: len(leader.election.members) == 2, 5, 0.01, "the leader seeing it gone")
    # Still the same term, never closed in between.
    assert leader.driver.is_open() and leader.manager.is_leader()
    assert "closed" not in log.of(leader.name)[opened:]
    assert open_hosts(hosts) == [leader]
    log.check()


def test_a_leader_dropped_from_the_group_closes_before_it_releases(hosts, log):
    leader = the_leader(hosts)
    dlm = leader.member.dlm
    with dlm.guard:
        dlm.groups["inspector-firewall"].discard(leader.member.member_id)
    wait_for(lambda: "release" in log.of(leader.name), 5, 0.01, "the old leader's release")
    the_leader(hosts)
    log.check()


def test_sigterm_closes_before_release_and_another_host_opens(hosts, log):
    leader = the_leader(hosts)
    leader.lifecycle.stop("SIGTERM (test)")
    assert leader.election.join(5)
    assert not leader.driver.is_open()
    assert log.of(leader.name)[-2:] == ["closed", "release"]
    successor = wait_for(
        lambda: [h for h in open_hosts(hosts) if h is not leader], 5, 0.01, "a successor"
    )[0]
    assert successor is not leader
    log.check()


def test_a_lost_dlm_closes_the_leader(hosts, log):
    leader = the_leader(hosts)
    leader.member.is_cut = True
    wait_for(lambda: not leader.driver.is_open(), 5, 0.01, "the cut-off leader closed")
    assert not leader.manager.is_leader()
    log.check()


def test_a_failed_apply_closes_and_the_next_one_opens(hosts, log):
    leader = the_leader(hosts)
    leader.driver.failing_applies = 2  # the patch, then the whole replacement
    leader.manager.blacklist.set("port-b", [B])  # something to apply
    leader.manager.wake()
    wait_for(lambda: leader.driver.failing_applies == 0, 5, 0.01, "the failed apply")
    wait_for(leader.driver.is_open, 5, 0.01, "open again")
    events = log.of(leader.name)
    assert events[-3:] == ["open", "closed", "open"]
    assert B in leader.driver.state.blacklist
    log.check()


def test_a_leader_that_cannot_apply_stops_its_process_closed(hosts, log):
    leader = the_leader(hosts)
    leader.driver.failing_applies = 1000
    leader.manager.blacklist.set("port-b", [B])
    leader.manager.wake()
    wait_for(leader.lifecycle.shutdown.is_set, 5, 0.01, "the process stopping")
    assert leader.lifecycle.exit_status == 1
    assert leader.lifecycle.reason == "firewall leader failed"
    assert not leader.driver.is_open()
    log.check()


def test_a_close_that_fails_is_retried_loudly(log, caplog):
    driver = RecordingDriver(log, "h")
    lifecycle = Lifecycle()
    manager = FirewallManager(driver, lifecycle, deny_unknown=False, retry_interval=0.001)
    manager.close_at_start()
    manager._leadership = _leadership(3.0)
    assert manager.sync()
    assert driver.is_open()
    driver.failing_closes = 2
    manager.stop()
    assert driver.state == CLOSED
    assert driver.failing_closes == 0
    assert "CANNOT CLOSE THE PXE FIREWALL" in caplog.text
    assert not lifecycle.shutdown.is_set()


def test_a_close_that_keeps_failing_stops_the_process(log, monkeypatch):
    monkeypatch.setattr(firewall_manager, "CLOSE_BOUND", 0.05)
    driver = RecordingDriver(log, "h")
    lifecycle = Lifecycle()
    manager = FirewallManager(driver, lifecycle, deny_unknown=False, retry_interval=0.001)
    driver.failing_closes = 10**6
    manager.stop()
    assert lifecycle.exit_status == 1
    assert "cannot close the PXE firewall" in lifecycle.reason


def test_shutdown_flag_alone_closes_the_firewall_thread(log):
    driver = RecordingDriver(log, "h")
    lifecycle = Lifecycle()
    manager = FirewallManager(driver, lifecycle, deny_unknown=False, refresh=0.01)
    manager.close_at_start()
    manager._leadership = _leadership(3.0)
    manager.start()
    wait_for(driver.is_open, 5, 0.01, "open")
    lifecycle.stop("gave up on the database (test)")  # Outages.give_up does this
    wait_for(lambda: not driver.is_open(), 5, 0.01, "closed by the shutdown flag")
    manager.stop()


def test_the_firewall_thread_stamps_every_period_leader_or_not():
    manager, _ = started_leader()
    stamps = []
    manager.stamp_every(lambda: stamps.append(time.monotonic()), 0.05)
    manager.start()
    wait_for(lambda: len(stamps) >= 3, 5, 0.01, "three stamps")
    assert not manager.is_leader()
    assert all(b - a >= 0.05 for a, b in itertools.pairwise(stamps))
    manager.stop()
    count = len(stamps)
    manager._wake.set()
    assert len(stamps) == count


# The lists: each source alone converges.


def started_leader(**options):
    """A manager that leads (no election) with its firewall thread running."""
    driver = RecordingDriver()
    lifecycle = Lifecycle()
    manager = FirewallManager(driver, lifecycle, deny_unknown=False, refresh=0.01, **options)
    manager.close_at_start()
    return manager, driver


def lead_in_thread(manager):
    leadership = _leadership(3.0)
    thread = threading.Thread(target=manager.lead, args=(leadership,), daemon=True)
    thread.start()
    return leadership, thread


def lists(driver):
    state = driver.state
    return (set(state.whitelist), set(state.blacklist)) if state else (set(), set())


def test_whitelist_from_store_polling_alone(store):
    manager, driver = started_leader()
    seed.node(store, "node-1", "waiting")
    store.set_attributes("node-1", {"mac": [A.upper()], "bmc_address": ["192.0.2.1"]})
    seed.node(store, "node-2", "finished")
    store.set_attributes("node-2", {"mac": [B]})
    manager.watch(manager.whitelist, introspected_macs(store), 0.02)
    manager.start()
    leadership, thread = lead_in_thread(manager)
    wait_for(lambda: lists(driver)[0] == {A}, 5, 0.01, "the whitelist from the store")
    store.delete_node("node-1")
    wait_for(lambda: lists(driver)[0] == set(), 5, 0.01, "the ended node gone")
    assert manager.whitelist.synced_at is not None
    leadership.reset.set()
    thread.join(5)
    assert not driver.is_open()
    manager.stop()


def test_whitelist_polled_only_by_the_leader():
    manager, _ = started_leader()
    calls, looks = [], []
    is_leader = manager.is_leader
    manager.is_leader = lambda: looks.append(1) or is_leader()
    manager.watch(manager.whitelist, lambda: calls.append(1) or {}, 0.01)
    manager.start()
    wait_for(lambda: len(looks) >= 5, 5, 0.01, "the poller's turns")
    assert calls == []  # a follower's poller skipped every turn
    leadership, thread = lead_in_thread(manager)
    wait_for(lambda: calls, 5, 0.01, "the leader's poll")
    leadership.reset.set()
    thread.join(5)
    manager.stop()


def test_whitelist_from_the_channel_alone():
    manager, driver = started_leader()
    channel = channels.LocalChannel()
    manager.listen(channel)
    manager.start()
    announcer = channels.Announcer(channel)
    leadership, thread = lead_in_thread(manager)
    announcer.introspection_started("node-1", [A, "5254.0000.0002"])
    wait_for(lambda: lists(driver)[0] == {A, B}, 5, 0.01, "whitelisted by the channel")
    announcer.introspection_ended("node-1")
    wait_for(lambda: lists(driver)[0] == set(), 5, 0.01, "removed by the channel")
    leadership.reset.set()
    thread.join(5)
    manager.stop()


def test_blacklist_from_ironic_polling_alone_on_every_host():
    ironic = FakeIronic()
    node = ironic.add_node()
    ironic.add_port(node.uuid, A)
    manager, driver = started_leader()  # a follower: nobody leads
    manager.watch(manager.blacklist, ironic_ports(ironic), 0.02)
    manager.start()
    wait_for(lambda: lists(driver)[1] == {A}, 5, 0.01, "the blacklist from Ironic")
    assert not driver.is_open()
    ironic.add_port(node.uuid, B)
    wait_for(lambda: lists(driver)[1] == {A, B}, 5, 0.01, "a new port")
    manager.stop()


def test_blacklist_from_ironic_notifications_and_announcements_alone():
    manager, driver = started_leader()
    channel = channels.LocalChannel()
    manager.listen(channel)
    manager.start()
    port = {"ironic_object.data": {"uuid": "port-1", "address": A, "node_uuid": "n"}}
    channel.publish("baremetal.port.create.end", port)
    channels.Announcer(channel).port_added("port-2", B)
    wait_for(lambda: lists(driver)[1] == {A, B}, 5, 0.01, "blacklisted from the channel")
    moved = {"ironic_object.data": {"uuid": "port-1", "address": C, "node_uuid": "n"}}
    channel.publish("baremetal.port.update.end", moved)
    channel.publish("baremetal.port.delete.end", {"ironic_object.data": {"uuid": "port-2"}})
    wait_for(lambda: lists(driver)[1] == {C}, 5, 0.01, "updated and deleted")
    manager.stop()


def test_a_poll_that_began_before_an_announcement_does_not_undo_it():
    clock = iter(range(100)).__next__
    macs = MacList("blacklist", clock=clock)
    started = clock()  # 0: the poll begins, without the new port
    assert macs.set("port-new", [A])  # 1: announced
    assert not macs.replace({"port-old": [B]}, started) or macs.macs() == {A, B}
    assert macs.macs() == {A, B}
    later = clock()  # a poll begun after the announcement is the truth
    macs.replace({"port-old": [B]}, later)
    assert macs.macs() == {B}
    macs.replace({"port-bad": ["not a mac"], "port-old": [B]}, clock())
    assert macs.macs() == {B}


# Status.


def test_status_answers_on_the_channel():
    manager, driver = started_leader()
    manager.host, manager.member = "host-a", "host-a-42"
    channel = channels.LocalChannel()
    manager.listen(channel)
    answers = []

    def collect(event, payload):
        if event == channels.STATUS:
            answers.append(payload)

    channel.subscribe(collect)
    manager.start()
    manager.blacklist.set("port-1", [A])
    manager.whitelist.set("node-1", [A, B])
    leadership, thread = lead_in_thread(manager)
    wait_for(lambda: lists(driver) == ({A, B}, {A}), 5, 0.01, "the lists applied")
    channel.publish(channels.STATUS_REQUEST, {"request_id": "r1"})
    answer = wait_for(lambda: answers, 5, 0.01, "an answer")[0]
    status = Status.from_dict(answer)
    assert answer["request_id"] == "r1"
    assert (status.host, status.member, status.open, status.leader) == (
        "host-a",
        "host-a-42",
        True,
        True,
    )
    assert (status.whitelist, status.blacklist) == (2, 0)  # A is whitelisted
    assert status.last_sync is not None
    assert status.apply_seconds is not None and status.apply_seconds >= 0
    assert status.role == "leader"
    follower = dataclasses.replace(status, member="b", open=False, leader=False, role="follower")
    text = table([status, follower])
    assert "host-a-42  recording  open    leader (term 1)  2          0          -" in text
    assert "b          recording  closed  follower" in text
    leadership.reset.set()
    thread.join(5)
    assert not manager.status().open
    manager.stop()


# What the workers announce.


class RecordingAnnouncer:
    def __init__(self):
        self.calls = []

    def introspection_started(self, node_uuid, macs):
        self.calls.append(("started", node_uuid, list(macs)))

    def introspection_ended(self, node_uuid):
        self.calls.append(("ended", node_uuid))


def test_workers_announce_an_introspection_before_power_on_and_its_end(store, conf):
    ironic = FakeIronic()
    node = ironic.add_node()
    ironic.add_port(node.uuid, A)
    announcer = RecordingAnnouncer()
    tasks = Tasks(store, ironic, conf, announcer=announcer)
    seed.node(store, node.uuid, "starting")
    now = store.clock()
    record = NodeRecord(node.uuid, "starting", 1, now, None, None, True, now)
    machine = Machine()
    request = Request(node_uuid=node.uuid, event=Event.INSPECT)
    tasks.run(record, request, machine.advance(None, Event.INSPECT))
    assert announcer.calls == [("started", node.uuid, [A])]
    assert [call.name for call in ironic.history][-1] == "set_power_state"
    for source, event in ((State.PROCESSING, Event.FINISH), (State.WAITING, Event.ABORT)):
        transition = machine.advance(source, event)
        assert tasks.has_work(transition)
        tasks.run(record, request, transition)
    assert announcer.calls[1:] == [("ended", node.uuid), ("ended", node.uuid)]
    finish = machine.advance(State.PROCESSING, Event.FINISH)
    assert not Tasks(store, ironic, conf).has_work(finish)


# The channel's configuration.


@pytest.mark.parametrize(
    ("queue_url", "channel_url", "expected"),
    [
        ("memory://", "", "memory://"),
        ("amqp://u:p@h:5672//", "", "rabbit://u:p@h:5672//"),
        ("redis://h:6379/0", "", None),
        ("redis://h:6379/0", "rabbit://h//", "rabbit://h//"),
    ],
)
def test_channel_url_follows_the_queue(conf, queue_url, channel_url, expected):
    conf.set_override("transport_url", queue_url, group="queue")
    conf.set_override("channel_url", channel_url, group="firewall")
    assert channels.channel_url(conf) == expected


def test_channel_from_conf(conf):
    assert isinstance(channels.from_conf(conf, host="h"), channels.LocalChannel)
    conf.set_override("channel_enabled", False, group="firewall")
    assert channels.from_conf(conf, host="h") is None
