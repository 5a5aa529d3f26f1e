"""Leader-elected periodic tasks across real worker processes on a real DLM (Redis) and
database (PostgreSQL): one leader, runs never overlap, fail-over after kill -9 and
SIGTERM, and a frozen leader fenced off when it wakes up."""

import itertools
import os
import re
import signal
import time

import pytest
import requests
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from tests.integration.cluster import running_deployment, wait_for, wait_state

pytestmark = pytest.mark.integration

#: Fast periods so that the test sees many runs; the lease is the default (3 s).
PERIOD = 0.2
LEASE = 3.0
INTERVAL = 0.5
OPTIONS = {
    "DEFAULT": {"clean_up_period": PERIOD},
    "coordination": {"lease_timeout": int(LEASE), "election_interval": INTERVAL},
}


class Runs:
    """The task_runs table of the deployment's database."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url, poolclass=NullPool)

    def all(self, task: str | None = None) -> list:
        query = "SELECT task, holder, term, started_at, finished_at FROM task_runs"
        if task:
            query += " WHERE task = :task"
        with self.engine.connect() as connection:
            rows = connection.execute(text(query + " ORDER BY started_at, id"), {"task": task})
            return list(rows)

    def holders(self) -> set[str]:
        return {row.holder for row in self.all()}

    def after(self, moment) -> list:
        return [row for row in self.all() if row.started_at > moment]

    def leadership(self):
        """The periodic tasks' newest claimed term: (holder, term)."""
        query = "SELECT holder, term FROM markers WHERE name = 'leader:periodic'"
        with self.engine.connect() as connection:
            return connection.execute(text(query)).one()

    def now(self):
        with self.engine.connect() as connection:
            # The processes stamp runs with their own (UTC) clock: same machine.
            return connection.execute(text("SELECT (now() AT TIME ZONE 'UTC')")).scalar()


def pid_of(holder: str) -> int:
    return int(holder.rsplit("-", 1)[1])


def leader_pid(runs: Runs, since=None) -> int:
    rows = runs.all() if since is None else runs.after(since)
    assert rows, "no periodic run recorded"
    return pid_of(rows[-1].holder)


def assert_no_overlap(runs: Runs, killed: set[int]) -> None:
    """Per task, each run starts after the previous one ended; a run without an end
    only comes from a process that was killed."""
    for task in ("timeout", "ironic_sync", "expiry"):
        rows = runs.all(task)
        assert rows, f"no run of {task}"
        for before, after in itertools.pairwise(rows):
            if before.finished_at is None:
                assert pid_of(before.holder) in killed, f"unfinished run of a live one: {before}"
                continue
            assert after.started_at >= before.finished_at, f"{task} runs overlap: {before} {after}"


@pytest.fixture
def cluster(tmp_path, postgresql_admin, redis_server, ironic_url):
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=redis_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=0,
        workers=3,
        options=OPTIONS,
    ) as deployment:
        # Every worker in the election before a test stops its leader: a follower still
        # starting would add its start-up to the fail-over measured.
        deployment.wait_workers()
        yield deployment


def by_pid(cluster, pid: int):
    return next(p for p in cluster.workers if p.pid == pid)


def test_one_leader_runs_every_task_and_runs_never_overlap(cluster):
    runs = Runs(cluster.database_url)
    wait_for(lambda: len(runs.all("expiry")) >= 5, 30, message="periodic runs")
    assert len(runs.holders()) == 1, "more than one process ran periodic tasks"
    killed: set[int] = set()
    for _change in range(2):  # two leader changes: kill -9, then SIGTERM
        leader = by_pid(cluster, leader_pid(runs))
        moment = runs.now()
        if not killed:
            leader.popen.kill()
            killed.add(leader.pid)
        else:
            leader.stop()
        wait_for(
            lambda moment=moment, old=leader.pid: any(
                pid_of(r.holder) != old for r in runs.after(moment)
            ),
            LEASE * 3 + 10,
            message="a new leader's run",
        )
    wait_for(lambda: len(runs.all("expiry")) >= 15, 30, message="more periodic runs")
    assert len(runs.holders()) == 3
    assert_no_overlap(runs, killed)
    terms = [row.term for row in runs.all()]
    assert terms == sorted(terms), "a run of an older term after a newer one"


def _failover(cluster, runs: Runs, how) -> float:
    """Seconds from the leader's death (kill -9 or SIGTERM) to a new leader's first run."""
    wait_for(runs.all, 30, message="a first periodic run")
    leader = by_pid(cluster, leader_pid(runs))
    moment = runs.now()
    start = time.monotonic()
    how(leader)
    first = wait_for(
        lambda: next((r for r in runs.after(moment) if pid_of(r.holder) != leader.pid), None),
        30,
        message="a new leader's run",
    )
    return (first.started_at - moment).total_seconds() if first else time.monotonic() - start


def test_failover_after_kill_within_lease_and_period(cluster):
    runs = Runs(cluster.database_url)
    elapsed = _failover(cluster, runs, lambda leader: leader.popen.kill())
    # The lease expires LEASE s after the last renewal; a follower looks every INTERVAL.
    assert elapsed < LEASE + INTERVAL + PERIOD + 0.5, elapsed


def test_failover_after_sigterm_before_the_lease_could_expire(cluster):
    runs = Runs(cluster.database_url)
    elapsed = _failover(cluster, runs, lambda leader: leader.popen.send_signal(signal.SIGTERM))
    # The stopping leader releases its lease: a follower takes it at its next look
    # (INTERVAL), 0.1-0.8 s on a loaded machine. A lease left to expire, as after a
    # kill -9, passes on no sooner than LEASE - INTERVAL (2.5 s) after the signal.
    assert elapsed < LEASE / 2, elapsed


def _freeze_the_leader(cluster, runs: Runs):
    """SIGSTOP the process that leads: (it, the term it holds, the database's time
    once it stopped); picked again when the lead moved between the look and the signal."""

    def frozen():
        leader = by_pid(cluster, leader_pid(runs))
        os.kill(leader.pid, signal.SIGSTOP)
        at, (holder, term) = runs.now(), runs.leadership()
        if pid_of(holder) == leader.pid:
            return leader, term, at
        os.kill(leader.pid, signal.SIGCONT)
        return None

    return wait_for(frozen, 30, message="the leader frozen")


def test_frozen_leader_is_fenced_when_it_wakes(cluster):
    runs = Runs(cluster.database_url)
    wait_for(runs.all, 30, message="a first periodic run")
    leader, old_term, frozen_at = _freeze_the_leader(cluster, runs)
    try:
        wait_for(
            lambda: any(pid_of(r.holder) != leader.pid for r in runs.after(frozen_at)),
            LEASE * 3 + 10,
            message="a new leader while the old one is frozen",
        )
    finally:
        os.kill(leader.pid, signal.SIGCONT)
    woke_at = runs.now()
    # Let the woken process run for a while: several periods and election rounds.
    wait_for(lambda: len(runs.after(woke_at)) >= 20, 30, message="runs after the wake-up")
    # It may lead again, under a term newer than its successor's (which a third process
    # may then supersede in turn): never under the one it held when frozen.
    stale = [
        r for r in runs.after(woke_at) if pid_of(r.holder) == leader.pid and r.term <= old_term
    ]
    assert not stale, f"the woken leader acted on its old term: {stale}"
    assert leader.alive(), leader.log_text()
    assert_no_overlap(runs, killed=set())


QUANTUM = 0.2
POWER_ON = re.compile(r"\] (?:power on|rebooting) at (\d+\.\d+)")


def test_reboot_throttle_spaces_power_ons_across_three_workers(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    nodes = [ironic_api.enroll()["uuid"] for _ in range(30)]
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        workers=3,
        options={"worker": {"reboot_throttle": QUANTUM, "pool_size": 4}},
    ) as cluster:
        for node in nodes:
            answer = requests.post(f"{cluster.url}/v1/introspection/{node}", timeout=10)
            assert answer.status_code == 202, answer.text
        for node in nodes:
            wait_state(cluster, node, "waiting", timeout=60)
        times = sorted(
            float(match)
            for worker in cluster.workers
            for match in POWER_ON.findall(worker.log_text())
        )
        assert len(times) == len(nodes), cluster.logs()
        busy = [w for w in cluster.workers if POWER_ON.search(w.log_text())]
        assert len(busy) > 1, "one worker did every power-on: the test proves nothing"
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert min(gaps) >= QUANTUM, gaps
        for node in nodes:  # Ironic's conductor applies each reboot after its 202
            ironic_api.wait_for(node, lambda n: n["power_state"] == "power on")
