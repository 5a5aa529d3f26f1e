"""Leader election on a fake DLM shared by simulated processes: one leader, re-election
when the lease is lost or the leader is dropped from the group (never because a
follower left), fencing by the local lease deadline."""

import math
import threading
import time

import pytest

from inspector.coordination.election import Election, Fenced, Leadership
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from tests.fakes.dlm import FakeDLM
from tests.integration.cluster import wait_for

KIND = "periodic"


class Process:
    """One simulated process: its DLM member, lifecycle and election; its body records
    the terms it led and runs until its leadership ends."""

    def __init__(self, dlm: FakeDLM, name: str, terms: list, budget: float = 60.0) -> None:
        self.member = dlm.member(name)
        self.lifecycle = Lifecycle()
        self.led: list[int] = []
        self.active = threading.Event()
        self.terms = terms
        outages = Outages(self.lifecycle, {"DLM": RetryPolicy(int(budget / 0.01), 0.01)})
        self.election = Election(
            self.member,
            KIND,
            self.body,
            self.lifecycle,
            outages,
            interval=0.01,
            claim=self.claim,
        )

    def claim(self, kind, holder):
        self.terms.append(holder)
        return len(self.terms)

    def body(self, leadership: Leadership) -> None:
        self.led.append(leadership.term)
        self.leadership = leadership
        self.active.set()
        try:
            while not leadership.wait(0.01):
                pass
        finally:
            self.active.clear()

    def leading(self) -> bool:
        return self.active.is_set()


@pytest.fixture
def cluster():
    dlm = FakeDLM()
    terms: list[str] = []
    processes = [Process(dlm, f"p{i}", terms) for i in range(3)]
    for process in processes:
        process.election.start()
    yield processes
    for process in processes:
        process.lifecycle.stop("test over")
        process.election.join(5)


def leaders(processes) -> list[Process]:
    return [p for p in processes if p.leading()]


def test_exactly_one_leader(cluster):
    wait_for(lambda: leaders(cluster), 5, 0.01, "a leader")
    for _ in range(20):
        assert len(leaders(cluster)) <= 1
    assert sum(len(p.led) for p in cluster) == 1


def test_sigterm_hands_over_and_leaves_the_group(cluster):
    first = wait_for(lambda: leaders(cluster), 5, 0.01, "a leader")[0]
    first.lifecycle.stop("SIGTERM")
    assert first.election.join(5)
    assert not first.leading()
    assert first.member.member_id not in first.member.members("inspector-periodic")
    wait_for(lambda: leaders(cluster), 5, 0.01, "a new leader")


def test_crashed_leader_is_replaced_and_its_loop_stops(cluster):
    first = wait_for(lambda: leaders(cluster), 5, 0.01, "a leader")[0]
    first.member.is_cut = True  # kill -9 as the others see it: gone, lease expired
    first.member.crash()
    new = wait_for(lambda: [p for p in leaders(cluster) if p is not first], 5, 0.01, "new")
    assert new[0].led[-1] > first.led[-1]
    wait_for(lambda: not first.leading(), 5, 0.01, "the cut-off leader stopping")


def test_a_follower_leaving_does_not_interrupt_the_leader(cluster):
    first = wait_for(lambda: leaders(cluster), 5, 0.01, "a leader")[0]
    wait_for(lambda: len(first.election.members) == 3, 5, 0.01, "the leader seeing all")
    followers = [p for p in cluster if p is not first]
    followers[0].lifecycle.stop("SIGTERM")
    followers[0].election.join(5)
    followers[1].member.is_cut = True  # kill -9: gone, its membership expired
    followers[1].member.crash()
    wait_for(lambda: len(first.election.members) == 1, 5, 0.01, "the leader seeing them gone")
    # The lease says who leads: the term goes on, nobody else was elected.
    assert first.leading()
    assert first.led == [1] and sum(len(p.led) for p in cluster) == 1


def test_a_leader_dropped_from_the_group_steps_down():
    dlm = FakeDLM()
    process = Process(dlm, "solo", [])
    process.election.start()
    try:
        wait_for(process.leading, 5, 0.01, "leading")
        with dlm.guard:
            dlm.groups["inspector-periodic"].discard("solo")  # expired while frozen
        wait_for(lambda: len(process.led) == 2, 5, 0.01, "a new term after rejoining")
    finally:
        process.lifecycle.stop("test over")
        process.election.join(5)


def test_a_lease_taken_too_long_ago_is_neither_claimed_nor_led(monkeypatch):
    """A process frozen between taking the lease and recording its term: by then the
    lease may be another's. No term is claimed, nothing logged as elected."""
    dlm = FakeDLM(lease_seconds=3.0)
    process = Process(dlm, "solo", [])
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    take = process.member.try_lease

    def frozen_after_taking(name):
        lease = take(name)
        clock[0] += 3.0  # the lease's whole length passes before the claim
        return lease

    monkeypatch.setattr(process.member, "try_lease", frozen_after_taking)
    try:
        process.election.step()
        assert process.terms == []
        assert process.election._leadership is None
        assert "inspector-leader-periodic" not in dlm.leases  # released
    finally:
        process.lifecycle.stop("test over")
        process.election._reset("test over")


def test_growth_is_ignored(cluster):
    first = wait_for(lambda: leaders(cluster), 5, 0.01, "a leader")[0]
    dlm = first.member.dlm
    newcomer = Process(dlm, "late", [])
    newcomer.election.start()
    try:
        wait_for(lambda: "late" in first.member.members("inspector-periodic"), 5, 0.01, "joined")
        assert first.leading() and len(first.led) == 1
    finally:
        newcomer.lifecycle.stop("test over")
        newcomer.election.join(5)


def test_lost_lease_resets_the_leader():
    dlm = FakeDLM()
    process = Process(dlm, "solo", [])
    process.election.start()
    try:
        wait_for(process.leading, 5, 0.01, "leading")
        with dlm.guard:
            dlm.leases.clear()  # expired, as after a freeze longer than the lease
            dlm.leases["inspector-leader-periodic"] = "someone-else"
        wait_for(lambda: not process.leading(), 5, 0.01, "stepping down")
    finally:
        process.lifecycle.stop("test over")
        process.election.join(5)


def test_dlm_outage_past_its_budget_stops_the_process():
    dlm = FakeDLM()
    process = Process(dlm, "solo", [], budget=0.2)
    process.election.start()
    wait_for(process.leading, 5, 0.01, "leading")
    process.member.is_cut = True
    assert process.lifecycle.shutdown.wait(5)
    assert process.lifecycle.exit_status == 1
    assert "gave up on DLM" in process.lifecycle.reason
    assert process.election.join(5)
    assert not process.leading()


def test_leadership_is_not_trusted_past_its_lease():
    leadership = Leadership(KIND, "me", 7, lease_seconds=10.0, acquired_at=time.monotonic())
    assert leadership.valid()
    leadership.check()
    stale = Leadership(KIND, "me", 7, lease_seconds=1.0, acquired_at=time.monotonic() - 1.0)
    assert not stale.valid()  # frozen past (most of) its lease: fenced
    assert stale.trusted_until() < time.time()
    with pytest.raises(Fenced, match="term 7"):
        stale.check()
    leadership.reset.set()
    assert not leadership.valid()
    assert leadership.wait(0)


def test_a_leadership_on_an_endless_lease_never_lapses():
    endless = Leadership(KIND, "me", 7, lease_seconds=math.inf, acquired_at=time.monotonic())
    assert endless.trusted_until() == math.inf
    assert endless.valid() and not endless.lapsed()
    endless.end("stopping")
    assert not endless.valid() and not endless.lapsed()
    with pytest.raises(Fenced, match=r"term 7\): stopping$"):
        endless.check()


def test_only_a_lease_that_ran_out_before_the_reset_lapsed():
    stopped = Leadership(KIND, "me", 7, lease_seconds=1.0, acquired_at=time.monotonic())
    stopped.reset.set()
    wait_for(lambda: stopped.trusted_until() < time.time(), 5, 0.01, "its trust run out")
    assert not stopped.lapsed()
    frozen = Leadership(KIND, "me", 7, lease_seconds=1.0, acquired_at=time.monotonic() - 1.0)
    assert frozen.lapsed()
    frozen.end("the lease was lost")  # woken up, its renewal failed
    assert frozen.lapsed()
    with pytest.raises(Fenced, match="the lease was lost"):
        frozen.check()


def test_a_stop_ends_the_leadership_saying_so():
    process = Process(FakeDLM(), "solo", [])
    process.election.start()
    wait_for(process.leading, 5, 0.01, "leading")
    process.lifecycle.stop("SIGTERM")
    assert process.election.join(5)
    assert not process.leadership.lapsed()
    with pytest.raises(Fenced, match=r"\(term 1\): stopping$"):
        process.leadership.check()


def test_the_group_is_listed_every_third_of_the_lease_not_at_every_look(monkeypatch):
    dlm = FakeDLM(lease_seconds=3.0)
    process = Process(dlm, "solo", [])
    listed = []
    members = process.member.members
    monkeypatch.setattr(process.member, "members", lambda group: listed.append(1) or members(group))
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    election = process.election
    try:
        for _ in range(10):  # ten looks within the same second: joined, listed once
            election.step()
        assert election.leadership is not None
        assert len(listed) == 2  # on joining, then the first watch
        clock[0] += 0.9
        election.step()
        assert len(listed) == 2
        clock[0] += 0.1  # a third of the lease since the last watch
        election.step()
        assert len(listed) == 3
        # A member gone is seen at the next watch; the leadership goes on.
        other = dlm.member("other")
        other.join("inspector-periodic")
        clock[0] += 1.0
        election.step()
        leadership = election.leadership
        other.leave("inspector-periodic")
        clock[0] += 0.5
        election.step()  # not watched yet
        assert election.members == {"solo", "other"}
        clock[0] += 0.5
        election.step()
        assert election.members == {"solo"}
        assert election.leadership is leadership and not leadership.reset.is_set()
    finally:
        process.lifecycle.stop("test over")
        election._reset("test over")
