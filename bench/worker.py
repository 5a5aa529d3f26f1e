"""Worker throughput against the cost of its parts, on real services.

    scripts/services start postgresql redis rabbitmq; eval "$(scripts/services env)"
    .venv/bin/python bench/worker.py [--nodes 200] [--out bench/results/worker.json]

Workers run with INSPECTOR_FAULTS=skip_tasks: the transitions without their Ironic
work, which is measured by the fleet benchmark. Measures, in one run: one tooz lock
acquire+release (Redis), one compare-and-swap (PostgreSQL: the state with its request
row, as a worker writes it), one put+get+ack (Redis and RabbitMQ); then transitions per
second of real `inspector worker` processes (1 and 2 processes) on Redis+PostgreSQL and
RabbitMQ+PostgreSQL, and the cost of one transition with a single worker thread.
Targets: a transition costs at most 2x the sum of its parts (each a
compare-and-swap; each of the two steps of an introspection, inspect and continue, a
lock and a put+get+ack, shared with the follow-up applied in it); 2 processes give
at least 1.6x the throughput of 1. Results go to JSON and to docs/performance.md,
the plot to docs/images/worker.png (`--plot-only` draws both again from the JSON).
Beside each throughput, how busy the machine's cores were (every process: workers,
services, this benchmark): when 2 processes keep them all busy, the machine, not the
workers, bounds the scaling figure.
"""

import argparse
import contextlib
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
import uuid

import sqlalchemy
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import plots  # noqa: E402
from inspector.broker.message import Request  # noqa: E402
from inspector.broker.queue import WorkQueue  # noqa: E402
from inspector.coordination import connect  # noqa: E402
from inspector.store import Change, Store, schema  # noqa: E402

DEADLINE = 300.0  # seconds any one scenario may take before the bench gives up


def env(name):
    value = os.environ.get(name)
    if not value:
        sys.exit(f"{name} is not set: run scripts/services start ... and eval its env")
    return value


def tooz_url(redis_url):
    return redis_url.split("/0")[0] + "?timeout=5"


@contextlib.contextmanager
def fresh_database(admin_url):
    admin = sqlalchemy.create_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    name = f"inspector_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    try:
        schema.upgrade(url)
        yield url
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def delete_queues(url, name):
    """A run's work queue (both lanes) and its dead letters, not left in the broker."""
    import kombu  # noqa: PLC0415 - only here, once a run is over

    with contextlib.suppress(Exception), kombu.Connection(url) as connection:
        for queue in (name, f"{name}.start", f"{name}.dead"):
            connection.default_channel.queue_delete(queue)


#: Transitions of one introspection (inspect, wait, continue, finish), and the steps
#: they take: inspect and continue each come off the queue and take the node's lock;
#: their follow-ups wait and finish are applied in the same steps, under that lock.
TRANSITIONS = 4
STEPS = 2


def introspection_parts_ms(lock_ms, cas_ms, queue_ms):
    """The sum of the parts of one introspection's transitions: a compare-and-swap
    each, and a lock and a put+get+ack per step."""
    return TRANSITIONS * cas_ms + STEPS * (lock_ms + queue_ms)


def per_op_ms(count, operation):
    started = time.perf_counter()
    for index in range(count):
        operation(index)
    return (time.perf_counter() - started) / count * 1000


def part_lock(redis_url, count):
    coordinator = connect(tooz_url(redis_url), f"bench-{os.getpid()}")
    coordinator.start()
    try:

        def once(index):
            with coordinator.try_lock(f"bench-{index % 50}") as held:
                assert held

        return per_op_ms(count, once)
    finally:
        coordinator.stop()


def part_cas(database_url, count):
    store = Store.from_url(database_url)
    # The worker's compare-and-swap: the state with its request row (Store.apply).
    node = [store.apply(Change(str(uuid.uuid4()), None, "bench", "inspect", None, "waiting"))]

    def once(index):
        current = node[0]
        change = Change(
            current.uuid, current.version, f"bench-{index}", "wait", "waiting", "waiting"
        )
        node[0] = store.apply(change, current)

    try:
        return per_op_ms(count, once)
    finally:
        store.close()


def part_queue(url, count):
    queue = WorkQueue(url, f"bench-{uuid.uuid4().hex[:8]}")

    def once(_index):
        queue.put(Request(node_uuid="n", event="wait"))
        delivery = queue.get(5.0)
        assert delivery is not None
        delivery.ack()

    try:
        queue.get(0.01)  # connect before timing
        return per_op_ms(count, once)
    finally:
        queue.close()
        delete_queues(url, queue.queue_name)


def write_config(directory, database_url, queue_url, queue_name, redis_url, pool_size):
    path = pathlib.Path(directory) / "inspector.conf"
    path.write_text(
        f"""[DEFAULT]
state_path = {directory}
[database]
connection = {database_url}
[queue]
transport_url = {queue_url}
queue_name = {queue_name}
[coordination]
backend_url = {tooz_url(redis_url)}
[worker]
pool_size = {pool_size}
get_timeout = 0.5
"""
    )
    return path


def wait_states(store, nodes, state):
    """Until every node in `nodes` is in `state`. Counts rather than lists, and only
    every 0.1 s: the benchmark's own watching must not eat the CPU it measures (listing
    a thousand uuids every 50 ms cost PostgreSQL and this process 10% of a core)."""
    deadline = time.monotonic() + DEADLINE
    query = text("SELECT count(*) FROM nodes WHERE state = :state AND uuid IN :uuids").bindparams(
        sqlalchemy.bindparam("uuids", expanding=True)
    )
    params = {"state": state, "uuids": list(nodes)}
    while True:
        with store.engine.connect() as connection:
            if connection.execute(query, params).scalar() == len(nodes):
                return
        if time.monotonic() > deadline:
            raise SystemExit(f"nodes not all {state} after {DEADLINE} s")
        time.sleep(0.1)  # polling the store with a deadline


def machine_cpu():
    """(busy, total) CPU jiffies of this machine so far, all cores (/proc/stat)."""
    with open("/proc/stat") as stat:
        fields = [int(value) for value in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def process_cpu(pid):
    """CPU jiffies (user + system) that process `pid` has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_started(logs, workers, timeout=120.0):
    """Until every worker process logged that its pool started."""
    deadline = time.monotonic() + timeout
    while not all("Worker pool of" in log.read_text() for log in logs):
        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
            raise SystemExit(f"worker processes did not start; see {logs}")
        time.sleep(0.1)  # polling with a deadline


def transitions(admin_url, queue_url, redis_url, processes, pool_size, nodes_count):
    """Transitions per second: each node goes inspect -> wait -> continue -> finish
    (two requests through the queue: wait and finish are applied in their steps)."""
    queue_name = f"bench-{uuid.uuid4().hex[:8]}"
    with fresh_database(admin_url) as database_url, tempfile.TemporaryDirectory() as tmp:
        config = write_config(tmp, database_url, queue_url, queue_name, redis_url, pool_size)
        store = Store.from_url(database_url)
        queue = WorkQueue(queue_url, queue_name)
        logs = [pathlib.Path(tmp) / f"worker-{index}.log" for index in range(processes)]
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "inspector.cmd", "worker", "--config-file", str(config)],
                cwd=ROOT,
                env={**os.environ, "INSPECTOR_FAULTS": "skip_tasks"},
                # A service logs to stdout (oslo.log), a refusal to start to stderr.
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
            )
            for log in logs
        ]
        try:
            nodes = [str(uuid.uuid4()) for _ in range(nodes_count)]
            # Warm-up: every process started (not one still importing while the others
            # are measured), then enough nodes through for every thread to connect.
            wait_started(logs, workers)
            warm = [str(uuid.uuid4()) for _ in range(2 * processes * pool_size)]
            for node in warm:
                queue.put(Request(node_uuid=node, event="inspect"))
            wait_states(store, warm, "waiting")
            started = time.perf_counter()
            cpu_before = machine_cpu()
            workers_before = sum(process_cpu(worker.pid) for worker in workers)
            own_before = time.process_time()
            for node in nodes:
                queue.put(Request(node_uuid=node, event="inspect"))
            wait_states(store, nodes, "waiting")
            for node in nodes:
                queue.put(Request(node_uuid=node, event="continue"))
            wait_states(store, nodes, "finished")
            elapsed = time.perf_counter() - started
            cpu_after = machine_cpu()
            workers_cpu = sum(process_cpu(worker.pid) for worker in workers) - workers_before
            own_cpu = time.process_time() - own_before
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(timeout=60)
            queue.close()
            delete_queues(queue_url, queue_name)
            store.close()
    count = TRANSITIONS * nodes_count
    busy = cpu_after[0] - cpu_before[0]
    return {
        "transitions": count,
        "seconds": elapsed,
        "per_second": count / elapsed,
        # Every process on the machine (workers, databases, brokers, this benchmark):
        # near 1.0, the run was bound by the machine's cores, not by the workers.
        "machine_cpu_busy": busy / max(1, cpu_after[1] - cpu_before[1]),
        "machine_cpu_ms_per_transition": busy / os.sysconf("SC_CLK_TCK") * 1000 / count,
        # The cores the worker processes kept busy, and this benchmark (the producer of
        # the requests): the rest of the machine's busy time is the services'.
        "workers_cores": workers_cpu / os.sysconf("SC_CLK_TCK") / elapsed,
        "benchmark_cores": own_cpu / elapsed,
    }


def run(args):
    admin = env("INSPECTOR_TEST_POSTGRESQL_URL")
    redis_url = env("INSPECTOR_TEST_REDIS_URL")
    rabbitmq_url = env("INSPECTOR_TEST_RABBITMQ_URL")
    results = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    with fresh_database(admin) as database_url:
        parts = {
            "lock_redis_ms": part_lock(redis_url, args.parts),
            "cas_postgresql_ms": part_cas(database_url, args.parts),
            "queue_redis_ms": part_queue(redis_url, args.parts),
            "queue_rabbitmq_ms": part_queue(rabbitmq_url, args.parts),
        }
    results["parts"] = parts
    scenarios = {}
    for name, queue_url in (("redis", redis_url), ("rabbitmq", rabbitmq_url)):
        queue_part = parts[f"queue_{name}_ms"]
        # Per transition: a quarter of an introspection's parts.
        sum_of_parts = (
            introspection_parts_ms(parts["lock_redis_ms"], parts["cas_postgresql_ms"], queue_part)
            / TRANSITIONS
        )
        single = transitions(admin, queue_url, redis_url, 1, 1, args.nodes // 2)
        one = transitions(admin, queue_url, redis_url, 1, args.pool_size, args.nodes)
        two = transitions(admin, queue_url, redis_url, 2, args.pool_size, args.nodes)
        cost = 1000 / single["per_second"]
        scenarios[name] = {
            "single_thread": single,
            "one_process": one,
            "two_processes": two,
            "transition_ms_single_thread": cost,
            "sum_of_parts_ms": sum_of_parts,
            "cost_ratio": cost / sum_of_parts,
            "scaling_2_over_1": two["per_second"] / one["per_second"],
        }
    results["scenarios"] = scenarios
    return results


def markdown(results):
    parts = results["parts"]
    lines = [
        "## Worker (`bench/worker.py`)",
        "",
        f"Machine: {results['machine']['cpus']} CPUs, Python {results['machine']['python']};"
        " every service on the same machine.",
        "",
        "| part | ms per operation |",
        "|---|---|",
        f"| tooz lock acquire+release (Redis) | {parts['lock_redis_ms']:.2f} |",
        f"| compare-and-swap and request row (PostgreSQL) | {parts['cas_postgresql_ms']:.2f} |",
        f"| put+get+ack (Redis) | {parts['queue_redis_ms']:.2f} |",
        f"| put+get+ack (RabbitMQ) | {parts['queue_rabbitmq_ms']:.2f} |",
        "",
        "| queue | 1 thread: ms per transition | sum of parts | ratio (target <= 2) "
        "| 1 process /s | 2 processes /s | 2 over 1 (target >= 1.6) "
        "| machine CPU busy, 1 / 2 processes | machine CPU ms per transition "
        "| cores used by the workers / services / benchmark, 1 process |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in results["scenarios"].items():
        lines.append(
            f"| {name} | {s['transition_ms_single_thread']:.2f} | {s['sum_of_parts_ms']:.2f} "
            f"| {s['cost_ratio']:.2f} | {s['one_process']['per_second']:.0f} "
            f"| {s['two_processes']['per_second']:.0f} | {s['scaling_2_over_1']:.2f} "
            f"| {s['one_process']['machine_cpu_busy']:.0%} / "
            f"{s['two_processes']['machine_cpu_busy']:.0%} "
            f"| {s['one_process']['machine_cpu_ms_per_transition']:.2f} "
            f"| {cores(s['one_process'], results['machine']['cpus'])} |"
        )
    return "\n".join(lines) + "\n"


def cores(run, cpus):
    """ "workers / services / benchmark" in cores; the services are the rest of the busy
    time."""
    services = run["machine_cpu_busy"] * cpus - run["workers_cores"] - run["benchmark_cores"]
    return f"{run['workers_cores']:.2f} / {services:.2f} / {run['benchmark_cores']:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pool-size", type=int, default=4)
    parser.add_argument("--parts", type=int, default=500, help="operations per part")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "worker.json"))
    plots.add_arguments(parser)
    args = parser.parse_args()
    plots.publish(
        args, run, markdown, plots.worker, "bench/worker.py", "worker.png", "Worker throughput"
    )


if __name__ == "__main__":
    main()
