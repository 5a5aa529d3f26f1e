"""Fail-over of the periodic tasks' leader, on real services, with the default settings.

    scripts/services start postgresql redis; eval "$(scripts/services env)"
    .venv/bin/python bench/failover.py [--rounds 10] [--out bench/results/failover.json]

Three `inspector worker` processes share PostgreSQL and Redis (DLM and queue). Each
round kills the current periodic leader (kill -9, then, in the second series, SIGTERM)
and measures the time from the signal to the first periodic task run that another
process records in the store: the new leader's first action. A killed process is
started again so that every round has three processes. Default [coordination] and
[DEFAULT] clean_up_period settings: lease 3 s, election interval 0.5 s.
Targets: median under 5 s after kill -9, under 1 s after SIGTERM.
Results go to JSON and to docs/performance.md,
the plot to docs/images/failover.png (`--plot-only` draws both again from the JSON).
"""

import argparse
import datetime
import os
import pathlib
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import sqlalchemy
from sqlalchemy import text
from sqlalchemy.pool import NullPool

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import plots  # noqa: E402
from bench.worker import env, fresh_database  # noqa: E402

INSPECTOR = [sys.executable, "-m", "inspector.cmd"]
DEADLINE = 60.0  # seconds a round may take before the bench gives up
TARGETS = {"kill": 5.0, "sigterm": 1.0}
#: Seconds without a leadership change before a round starts (over one lease + margin).
SETTLE = 4.5


def write_config(directory, database_url, redis_url):
    base = redis_url.split("://", 1)[1].split("/", 1)[0]
    path = pathlib.Path(directory) / "inspector.conf"
    path.write_text(
        f"""[DEFAULT]
state_path = {directory}
[database]
connection = {database_url}
[queue]
transport_url = {redis_url}
queue_name = bench-failover-{uuid.uuid4().hex[:8]}
[coordination]
backend_url = redis://{base}?namespace=bench-failover-{uuid.uuid4().hex[:8]}
"""
    )
    return path


class Workers:
    def __init__(self, config, directory):
        self.config = config
        self.directory = pathlib.Path(directory)
        self.processes = {}

    def start(self):
        log = open(self.directory / f"worker-{len(self.processes)}.log", "w")
        process = subprocess.Popen(
            [*INSPECTOR, "worker", "--config-file", str(self.config)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.processes[process.pid] = process
        return process

    def stop_all(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def now_utc(engine):
    with engine.connect() as connection:
        return connection.execute(text("SELECT (now() AT TIME ZONE 'UTC')")).scalar()


def last_run(engine, after=None):
    query = "SELECT holder, started_at FROM task_runs"
    if after is not None:
        query += " WHERE started_at > :after"
    with engine.connect() as connection:
        return connection.execute(
            text(query + " ORDER BY started_at DESC LIMIT 1"), {"after": after}
        ).first()


def first_run_by_other(engine, after, old_holder):
    with engine.connect() as connection:
        return connection.execute(
            text(
                "SELECT holder, started_at FROM task_runs WHERE started_at > :after "
                "AND holder != :old ORDER BY started_at LIMIT 1"
            ),
            {"after": after, "old": old_holder},
        ).first()


def poll(predicate, what):
    deadline = time.monotonic() + DEADLINE
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise SystemExit(f"no {what} after {DEADLINE} s")
        time.sleep(0.02)  # polling the store with a deadline


def leader_marker(engine):
    with engine.connect() as connection:
        return connection.execute(
            text("SELECT holder, term FROM markers WHERE name = 'leader:periodic'")
        ).first()


def settled_leader(engine, quiet=SETTLE):
    """The leader once no election happened for `quiet` seconds (the round before may
    still be settling: the process restarted after it joins and runs for election)."""
    poll(lambda: last_run(engine), "periodic run")
    current, since = leader_marker(engine), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.05)  # polling the store with a deadline (poll() below bounds it)
        latest = leader_marker(engine)
        if latest != current:
            current, since = latest, time.monotonic()
    return poll(lambda: last_run(engine), "periodic run of the settled leader")


def one_round(engine, workers, how):
    """Seconds from the signal to the new leader's first recorded run."""
    leader = settled_leader(engine)
    pid = int(leader.holder.rsplit("-", 1)[1])
    process = workers.processes[pid]
    before = now_utc(engine)
    sent = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
    first = poll(lambda: first_run_by_other(engine, before, leader.holder), "new leader")
    process.wait(timeout=30)
    del workers.processes[pid]
    workers.start()  # back to three processes for the next round
    return (first.started_at - sent).total_seconds()


def run(args):
    admin_url = env("INSPECTOR_TEST_POSTGRESQL_URL")
    redis_url = env("INSPECTOR_TEST_REDIS_URL")
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "settings": {"lease_timeout": 3, "election_interval": 0.5, "clean_up_period": 30},
        "rounds": args.rounds,
        "series": {},
    }
    with fresh_database(admin_url) as database_url, tempfile.TemporaryDirectory() as tmp:
        engine = sqlalchemy.create_engine(database_url, poolclass=NullPool)
        workers = Workers(write_config(tmp, database_url, redis_url), tmp)
        try:
            for _ in range(3):
                workers.start()
            for how in ("kill", "sigterm"):
                times = [one_round(engine, workers, how) for _ in range(args.rounds)]
                results["series"][how] = {
                    "seconds": times,
                    "median": statistics.median(times),
                    "max": max(times),
                    "target": TARGETS[how],
                    "met": statistics.median(times) < TARGETS[how],
                }
                print(how, [f"{t:.2f}" for t in times], flush=True)
        finally:
            workers.stop_all()
            engine.dispose()
    return results


def markdown(results):
    lines = [
        "## Leader fail-over (`bench/failover.py`)",
        "",
        f"Three worker processes on PostgreSQL and Redis, default settings (lease "
        f"{results['settings']['lease_timeout']} s, election interval "
        f"{results['settings']['election_interval']} s); time from the signal to the new "
        f"leader's first periodic run, {results['rounds']} rounds each.",
        "",
        "| signal | median (s) | max (s) | target (s) | met |",
        "|---|---|---|---|---|",
    ]
    names = {"kill": "kill -9", "sigterm": "SIGTERM"}
    for how, series in results["series"].items():
        lines.append(
            f"| {names[how]} | {series['median']:.2f} | {series['max']:.2f} "
            f"| < {series['target']:.0f} | {'yes' if series['met'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "failover.json"))
    plots.add_arguments(parser)
    args = parser.parse_args()
    plots.publish(
        args, run, markdown, plots.failover, "bench/failover.py", "failover.png", "Leader fail-over"
    )


if __name__ == "__main__":
    main()
