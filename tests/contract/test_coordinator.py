"""One suite for the coordinator, run on every backend: in-process, and tooz on each DLM
the docs offer (Redis, etcd, ZooKeeper, memcached), each a real server of
scripts/services, and tooz's Redis driver on fakeredis too (in the test process, so not
the checks with a second process): locks, their expiry and renewal, groups, leader
election, outages."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

import pytest

from inspector.coordination import connect
from inspector.coordination.election import SAFETY, Election
from inspector.errors import ServiceUnavailable
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from tests.dlm_servers import SERVICES, dlm_url
from tests.integration.cluster import wait_for
from tests.integration.proxy import TcpProxy

#: The tooz backends, each on its real server.
TOOZ = [pytest.param(name, marks=pytest.mark.integration) for name in ("redis", *SERVICES)]
#: The tooz backends a test process can reach: those, and Redis's on fakeredis (tooz
#: cannot start in another process against it, see tests.fakes.redis_server).
IN_PROCESS = [*TOOZ, "fakeredis"]
#: A short lease for the tests that wait for one to expire.
LEASE = 2


def tooz_url(request, name: str) -> str:
    if name in ("redis", "fakeredis"):
        base = request.getfixturevalue(f"{name}_url").split("/0")[0]
        return f"{base}?timeout=5"
    url = dlm_url(name)
    if name == "zookeeper":  # its `timeout` is the session's: set from the lease
        return url
    return f"{url}?timeout=5"


@pytest.fixture(params=["memory", *IN_PROCESS])
def url(request):
    if request.param == "memory":
        return "memory://"
    return tooz_url(request, request.param)


@pytest.fixture(params=IN_PROCESS)
def lease_url(request):
    """A DLM whose leases expire (not memory://)."""
    return tooz_url(request, request.param)


@pytest.fixture(params=TOOZ)
def shared_url(request):
    """A DLM that separate processes share."""
    return tooz_url(request, request.param)


@pytest.fixture
def coordinators(url):
    """Two members of the same DLM (for memory://, the same process table)."""
    first = connect(url, f"a-{uuid.uuid4().hex[:6]}")
    second = first if url.startswith("memory") else connect(url, f"b-{uuid.uuid4().hex[:6]}")
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


def _short_leases(url):
    started = []
    for prefix in "ab":
        coordinator = connect(url, f"{prefix}-{uuid.uuid4().hex[:6]}", lease_seconds=LEASE)
        coordinator.start()
        started.append(coordinator)
    yield started
    for coordinator in started:
        coordinator.stop()


@pytest.fixture
def short_leases(lease_url):
    """Two members of a DLM whose leases last LEASE seconds."""
    yield from _short_leases(lease_url)


@pytest.fixture
def shared_short_leases(shared_url):
    """The same, on a DLM that separate processes share."""
    yield from _short_leases(shared_url)


def test_a_held_lock_excludes_others(coordinators):
    first, second = coordinators
    name = f"node-{uuid.uuid4()}"
    with first.try_lock(name) as held:
        assert held
        with second.try_lock(name) as other:
            assert not other
    with second.try_lock(name) as again:
        assert again


def test_different_names_do_not_conflict(coordinators):
    first, second = coordinators
    with first.try_lock(f"a-{uuid.uuid4()}") as one, second.try_lock(f"b-{uuid.uuid4()}") as two:
        assert one and two


def test_lock_is_released_when_the_block_raises(coordinators):
    first, second = coordinators
    name = f"node-{uuid.uuid4()}"
    with pytest.raises(KeyError), first.try_lock(name):
        raise KeyError("boom")
    with second.try_lock(name) as held:
        assert held


def test_only_one_of_many_threads_holds_it(coordinators):
    first, _ = coordinators
    name = f"node-{uuid.uuid4()}"
    contenders = 8
    barrier = threading.Barrier(contenders)
    results = []
    lock = threading.Lock()
    all_tried = threading.Event()

    def contend():
        barrier.wait()
        with first.try_lock(name) as held:
            with lock:
                results.append(held)
                if len(results) == contenders:
                    all_tried.set()
            if held:
                # Hold it until every other thread has tried.
                all_tried.wait(10)

    threads = [threading.Thread(target=contend) for _ in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert len(results) == contenders
    assert results.count(True) == 1


def test_flags_say_what_the_backend_can_do(url):
    coordinator = connect(url, "flags")
    assert coordinator.is_single_process == url.startswith("memory")
    assert coordinator.is_single_host == url.startswith(("memory", "memcached"))


def test_groups_list_their_live_members(coordinators):
    first, second = coordinators
    group = f"group-{uuid.uuid4().hex[:8]}"
    assert first.members(group) == frozenset()
    first.join(group)
    second.join(group)
    first.join(group)  # twice: harmless
    expected = {first.member_id, second.member_id}
    assert first.members(group) == expected
    assert second.members(group) == expected
    second.leave(group)
    second.leave(group)  # twice: harmless
    if first is not second:
        assert first.members(group) == {first.member_id}
    first.leave(group)
    assert first.members(group) == frozenset()


def test_a_renewed_lease_outlives_its_timeout(short_leases):
    """The holder renews (as an election does, and the heartbeat on its own): nobody
    takes the lease for three of its timeouts, and each renewal says it is still held."""
    holder, other = short_leases
    name = f"leader-{uuid.uuid4().hex[:8]}"
    lease = holder.try_lease(name)
    assert lease is not None
    until = time.monotonic() + 2 * (LEASE + 1)
    try:
        while time.monotonic() < until:
            assert lease.renew()
            assert other.try_lease(name) is None
            time.sleep(LEASE / 6)  # the pace of the renewals under test, not a wait
    finally:
        lease.release()
    assert wait_for(lambda: other.try_lease(name), 5, 0.05, "the released lease")


def test_a_released_lease_cannot_be_renewed(short_leases):
    holder, other = short_leases
    name = f"leader-{uuid.uuid4().hex[:8]}"
    lease = holder.try_lease(name)
    assert lease is not None
    lease.release()
    taken = other.try_lease(name)
    assert taken is not None
    assert not lease.renew()
    lease.release()  # a second release must not free the other's lease
    assert holder.try_lease(name) is None
    taken.release()


#: A process that takes a lease and joins a group, says "ready", then renews until a
#: renewal fails, and says "lost".
HOLDER = """
import sys, time
from inspector.coordination import connect
url, member, name, group, lease_seconds = sys.argv[1:]
coordinator = connect(url, member, lease_seconds=int(lease_seconds), max_retries=0)
coordinator.start()
lease = coordinator.try_lease(name)
assert lease is not None, "the lease is free"
coordinator.join(group)
print("ready", flush=True)
while lease.renew():
    time.sleep(0.1)
print("lost", flush=True)
lease.release()
coordinator.stop()
"""


class Holder:
    """HOLDER in a child process; its lines come through a queue."""

    def __init__(self, url: str, name: str, group: str) -> None:
        self.member = f"frozen-{uuid.uuid4().hex[:6]}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, url, self.member, name, group, str(LEASE)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("<exit>")

    def said(self, line: str, timeout: float) -> None:
        try:
            got = self.lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"the holder did not say {line!r} within {timeout} s")
        assert got == line

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(10)
        self.process.stdout.close()


def test_a_frozen_holder_loses_its_lease_and_membership(shared_short_leases):
    """SIGSTOP, like a stalled VM: its lease and membership expire, not before the
    holder stops trusting its lease (SAFETY of it after its last renewal), and when it
    wakes up its next renewal tells it the lease is lost."""
    _, other = shared_short_leases
    name, group = f"leader-{uuid.uuid4().hex[:8]}", f"group-{uuid.uuid4().hex[:8]}"
    holder = Holder(other.url, name, group)
    try:
        holder.said("ready", 30)
        other.join(group)
        assert holder.member in other.members(group)
        os.kill(holder.process.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        taken = wait_for(lambda: other.try_lease(name), LEASE + 10, 0.02, "the frozen lease")
        # The holder renewed at most 0.1 s (its pace) and a round trip before it froze.
        assert time.monotonic() - frozen_at >= SAFETY * LEASE - 0.2
        wait_for(lambda: holder.member not in other.members(group), LEASE + 10, 0.05, "drop")
        os.kill(holder.process.pid, signal.SIGCONT)
        holder.said("lost", 30)
        assert holder.process.wait(30) == 0
        assert taken.renew()  # the holder's release did not free the new holder's lease
        assert other.try_lease(name) is None
        taken.release()
        other.leave(group)
    finally:
        holder.close()


class Candidate:
    """One process's election of a kind, whose body runs while it leads."""

    def __init__(self, url: str, kind: str) -> None:
        self.coordinator = connect(url, f"{kind}-{uuid.uuid4().hex[:6]}", lease_seconds=LEASE)
        self.coordinator.start()
        self.lifecycle = Lifecycle()
        self.leading = threading.Event()
        self.terms = 0
        outages = Outages(self.lifecycle, {"DLM": RetryPolicy(100, 0.1)})
        self.election = Election(
            self.coordinator, kind, self.body, self.lifecycle, outages, interval=0.05
        )

    def body(self, leadership) -> None:
        self.terms += 1
        self.leading.set()
        try:
            while not leadership.wait(0.02):
                pass
        finally:
            self.leading.clear()

    def stop(self) -> None:
        self.lifecycle.stop("test over")
        self.election.join(LEASE + 10)
        self.coordinator.stop()


def test_one_leader_and_a_hand_over(lease_url):
    """Two processes' elections of one kind: exactly one leads; when it stops (SIGTERM:
    reset, release, leave), the other takes over."""
    kind = f"kind{uuid.uuid4().hex[:6]}"
    candidates = [Candidate(lease_url, kind) for _ in range(2)]
    try:
        for candidate in candidates:
            candidate.election.start()

        def leaders():
            return [c for c in candidates if c.leading.is_set()]

        first = wait_for(leaders, 10, 0.02, "a leader")[0]
        until = time.monotonic() + LEASE + 1
        while time.monotonic() < until:  # past a lease: renewals keep one leader
            assert leaders() == [first]
            time.sleep(0.05)  # the pace of the check, not a wait for a condition
        assert first.election.members == {c.coordinator.member_id for c in candidates}
        first.stop()
        assert not first.leading.is_set()
        second = wait_for(leaders, LEASE + 10, 0.02, "the other leader")[0]
        assert second is not first
        assert first.terms == 1
        # The one that left drops out of the group (which also resets the new leader once).
        alone = {second.coordinator.member_id}
        wait_for(lambda: second.election.members == alone, LEASE + 10, 0.05, "the group")
        wait_for(leaders, LEASE + 10, 0.02, "a leader again")
        assert leaders() == [second]
    finally:
        for candidate in candidates:
            candidate.stop()


def _through(proxy: TcpProxy, url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(netloc=f"127.0.0.1:{proxy.port}"))


def test_an_outage_is_service_unavailable_and_ends(lease_url):
    """Cut from its DLM, a coordinator's calls raise ServiceUnavailable (what the
    elections and the outage budget act on), not the client library's errors, and a
    held lease does not renew; once the DLM is back, the calls work again."""
    parts = urllib.parse.urlsplit(lease_url)
    with TcpProxy(parts.hostname, parts.port) as proxy:
        coordinator = connect(_through(proxy, lease_url), "cut", lease_seconds=LEASE)
        coordinator.start()
        try:
            group = f"group-{uuid.uuid4().hex[:8]}"
            coordinator.join(group)
            lease = coordinator.try_lease(f"leader-{uuid.uuid4().hex[:8]}")
            assert lease is not None
            proxy.cut()
            started = time.monotonic()
            with pytest.raises(ServiceUnavailable):
                coordinator.members(group)
            with pytest.raises(ServiceUnavailable):
                coordinator.try_lease(f"node-{uuid.uuid4()}")
            assert not lease.renew()
            lease.release()  # logs, does not raise
            assert time.monotonic() - started < 30
            proxy.restore()

            def works():
                try:
                    coordinator.join(group)
                    lease = coordinator.try_lease(f"node-{uuid.uuid4()}")
                except ServiceUnavailable:
                    return False
                assert lease is not None
                lease.release()
                return coordinator.member_id in coordinator.members(group)

            wait_for(works, 30, 0.1, "the DLM back")
            coordinator.leave(group)
        finally:
            coordinator.stop()


@pytest.mark.parametrize(
    "dead",
    [
        "redis://127.0.0.1:1?timeout=1",
        "etcd3+http://127.0.0.1:1?timeout=1",
        "zookeeper://127.0.0.1:1?timeout=1",
        "memcached://127.0.0.1:1?timeout=1",
    ],
)
def test_unreachable_dlm_fails_after_its_retries(dead):
    shutdown = threading.Event()
    coordinator = connect(dead, "x", max_retries=1, retry_interval=0.01, shutdown=shutdown)
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="DLM"):
        coordinator.start()
    # Our retry policy decides, not tooz's or redis-py's hidden ones (a minute per call).
    assert time.monotonic() - started < 10
