"""Inspection history at scale: database size per introspection, history and drift
latency over HTTP under load, the CPU drift adds to one introspection, and Ironic's cost
of the Ironic history task.

    scripts/services start postgresql rabbitmq; eval "$(scripts/services env)"
    .venv/bin/python bench/history.py --nodes 10000 [--threads 8] [--seconds 10]
        [--write-rate 20] [--ironic-runs 5] [--ironic-nodes 10000] [--inspected 300]

Fills a fresh PostgreSQL database with `--nodes` nodes of `--per-node` introspections
each, every one the large real-format payload (tests/fixtures/ipa/synthetic-large-server.json)
with its processed data (the payload and its drift), then: the table's size per
introspection (PostgreSQL's pg_total_relation_size, TOAST compression included), scaled
to 10,000 nodes of 10; the API served by the built-in server (`inspector api`'s) in a
process of its own, `--threads` threads asking GET .../history and GET .../drift of
random nodes over HTTP (requests, a kept-alive session each) for `--seconds`, p50 and
p99 of each, once quiet and once while a writer thread adds introspections through the
store at `--write-rate` a second (the rate achieved is reported); the CPU time of
`drift.compare` on the large payload (target under 5 ms); and Ironic's CPU and requests
for the Ironic history task (bench/history_ironic.py; `--ironic-runs 0` skips it).
Results: bench/results/history.json and docs/performance.md (--plot-only redraws).
"""

import argparse
import contextlib
import copy
import json
import multiprocessing
import os
import pathlib
import random
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402
from sqlalchemy import text  # noqa: E402

from bench import history_ironic, plots  # noqa: E402
from bench.worker import env, fresh_database  # noqa: E402
from inspector import conf as config  # noqa: E402
from inspector.api import app as app_factory  # noqa: E402
from inspector.api import server  # noqa: E402
from inspector.conf import ironic_history  # noqa: E402
from inspector.processing import drift  # noqa: E402
from inspector.store import Store, introspections  # noqa: E402
from tests import fixtures  # noqa: E402

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
#: The site the issue sizes: nodes, introspections each.
SITE = (10_000, 10)
T0 = datetime(2026, 1, 1)
#: The Ironic history task's default period.
DEFAULT_PERIOD = next(o.default for o in ironic_history.OPTS if o.name == "period")


def payloads(per_node: int) -> list[tuple[dict, dict]]:
    """(raw, processed) of each introspection of a node: the firmware changes each time."""
    base = fixtures.load(fixtures.LARGE_SERVER)
    result, previous = [], None
    for index in range(per_node):
        raw = copy.deepcopy(base)
        raw["inventory"]["system_vendor"]["firmware"]["version"] = f"1.{index}"
        processed = dict(raw, drift=drift.document(index or None, previous, raw))
        result.append((raw, processed))
        previous = raw
    return result


def fill(store: Store, nodes: int, per_node: int) -> list[str]:
    """The nodes' histories, written in batches of one node; their UUIDs."""
    rows = [
        (json.dumps(raw, sort_keys=True), json.dumps(processed, sort_keys=True))
        for raw, processed in payloads(per_node)
    ]
    uuids = [str(uuid.uuid4()) for _ in range(nodes)]
    statement = introspections.UPSERT_STATEMENTS["postgresql"]
    with store.engine.begin() as connection:
        for node_uuid in uuids:
            connection.execute(
                statement,
                [
                    {
                        "node_uuid": node_uuid,
                        "started_at": T0 + timedelta(hours=index),
                        "source": introspections.INSPECTOR,
                        "state": "finished",
                        "finished_at": T0 + timedelta(hours=index, minutes=5),
                        "error": None,
                        "raw": raw,
                        "processed": processed,
                    }
                    for index, (raw, processed) in enumerate(rows)
                ],
            )
    return uuids


def size_per_introspection(store: Store) -> float:
    with store.engine.connect() as connection:
        size = connection.execute(
            text("SELECT pg_total_relation_size('introspections')")
        ).scalar_one()
        count = connection.execute(text("SELECT count(*) FROM introspections")).scalar_one()
    return size / count


def serve_api(url: str, ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    """The API (noauth, data in the database) on the built-in server of `inspector api`,
    in a process of its own; its port put on `ports`; served until `stop` is set."""
    store = Store.from_url(url)
    conf = config.load([])
    conf.set_override("auth_strategy", "noauth")
    conf.set_override("store_data", "database", group="processing")
    app = app_factory.create_app(conf, store=store, queue=None, ironic=None)
    http = server.Server(app, "127.0.0.1", 0)
    http.start()
    ports.put(http.port)
    stop.wait()
    http.stop()
    store.close()


@contextlib.contextmanager
def api(url: str) -> Iterator[str]:
    """The API's base URL, served by its own process (`serve_api`) while in the block."""
    context = multiprocessing.get_context("spawn")
    ports, stop = context.Queue(), context.Event()
    process = context.Process(target=serve_api, args=(url, ports, stop), daemon=True)
    process.start()
    try:
        yield f"http://127.0.0.1:{ports.get(timeout=60)}"
    finally:
        stop.set()
        process.join(timeout=30)


class Writer(threading.Thread):
    """Adds introspections at `rate` a second (a new finished one of a random node, with
    its drift, through the store as the Ironic history task keeps one) until stopped."""

    def __init__(self, store: Store, uuids: list[str], rate: float) -> None:
        super().__init__(name="history-writer", daemon=True)
        self.store, self.uuids, self.rate = store, uuids, rate
        self.written = 0
        self.seconds = 0.0
        self.halt = threading.Event()
        raw, processed = payloads(2)[1]
        self.raw, self.processed = raw, processed

    def run(self) -> None:
        began, chooser = time.monotonic(), random.Random(0)
        while not self.halt.wait(max(0.0, began + self.written / self.rate - time.monotonic())):
            at = T0 + timedelta(days=365, seconds=self.written)
            entry = {"source": introspections.INSPECTOR, "state": "finished"}
            entry |= {"started_at": at, "finished_at": at, "error": None}
            self.store.keep_entry(chooser.choice(self.uuids), entry, self.raw, self.processed)
            self.written += 1
        self.seconds = time.monotonic() - began

    def achieved(self) -> dict:
        return {
            "target_per_second": self.rate,
            "written": self.written,
            "per_second": self.written / self.seconds,
        }


def percentiles(latencies: list[float], seconds: float) -> dict:
    latencies.sort()
    return {
        "requests": len(latencies),
        "per_second": len(latencies) / seconds,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[int(len(latencies) * 0.99)],
    }


def load(base: str, uuids: list[str], path: str, threads: int, seconds: float) -> dict:
    """Latencies (ms) of GET `path` of random nodes over HTTP from `threads` threads, each
    on its own kept-alive session."""
    latencies: list[float] = []
    guard = threading.Lock()
    stop = time.monotonic() + seconds

    def loop(seed: int) -> None:
        chooser, mine = random.Random(seed), []
        with requests.Session() as session:
            session.headers.update(V19)
            while time.monotonic() < stop:
                node = chooser.choice(uuids)
                began = time.perf_counter()
                answer = session.get(f"{base}/v1/introspection/{node}/{path}", timeout=60)
                mine.append((time.perf_counter() - began) * 1000)
                assert answer.status_code == 200, answer.text
        with guard:
            latencies.extend(mine)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return percentiles(latencies, seconds)


def reads(base: str, uuids: list[str], args) -> dict:
    return {
        path: load(base, uuids, path, args.threads, args.seconds) for path in ("history", "drift")
    }


def reads_under_load(store: Store, base: str, uuids: list[str], args) -> dict:
    """`reads` while a Writer adds introspections at `args.write_rate` a second."""
    writer = Writer(store, uuids, args.write_rate)
    writer.start()
    try:
        measured = reads(base, uuids, args)
    finally:
        writer.halt.set()
        writer.join()
    return measured | {"writes": writer.achieved()}


def drift_cpu(rounds: int = 2000) -> dict:
    """CPU milliseconds of one drift.compare on the large payload (a disk, a NIC and the
    firmware changed)."""
    old = fixtures.load(fixtures.LARGE_SERVER)
    new = copy.deepcopy(old)
    new["inventory"]["disks"][1]["serial"] = "REPLACED"
    new["inventory"]["interfaces"].append(
        dict(new["inventory"]["interfaces"][0], mac_address="52:54:00:aa:bb:09")
    )
    new["inventory"]["system_vendor"]["firmware"]["version"] = "9.9"
    samples = []
    for _ in range(rounds):
        began = time.process_time_ns()
        drift.compare(old, new)
        samples.append((time.process_time_ns() - began) / 1e6)
    samples.sort()
    return {"mean_ms": statistics.fmean(samples), "p99_ms": samples[int(rounds * 0.99)]}


@contextlib.contextmanager
def load_samples(every: float = 5.0) -> Iterator[list[float]]:
    """The machine's 1-minute load average every `every` seconds while in the block."""
    samples: list[float] = [os.getloadavg()[0]]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, name="load-sampler", daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        done.set()
        sampler.join()


def measure(args) -> dict:
    with load_samples() as loads, fresh_database(env("INSPECTOR_TEST_POSTGRESQL_URL")) as url:
        store = Store.from_url(url)
        try:
            began = time.monotonic()
            uuids = fill(store, args.nodes, args.per_node)
            filled = time.monotonic() - began
            per_row = size_per_introspection(store)
            with api(url) as base:
                quiet = reads(base, uuids, args)
                loaded = reads_under_load(store, base, uuids, args)
            ironic = history_ironic.measure(args, store) if args.ironic_runs else None
        finally:
            store.close()
    return {
        "settings": vars(args) | {"out": None},
        "machine": {
            "cpus": os.cpu_count(),
            "load_min": min(loads),
            "load_mean": statistics.fmean(loads),
            "load_max": max(loads),
        },
        "fill_seconds": filled,
        "bytes_per_introspection": per_row,
        "site_gib": per_row * SITE[0] * SITE[1] / 2**30,
        "reads": quiet,
        "reads_under_load": loaded,
        "drift_cpu": drift_cpu(),
        "ironic": ironic,
    }


def read_rows(results) -> list[str]:
    rows = []
    for key, label in (("reads", "quiet"), ("reads_under_load", "under load")):
        for path in ("history", "drift"):
            read = results[key][path]
            rows.append(
                f"| GET .../{path} p50 / p99, {label} | {read['p50_ms']:.1f} / "
                f"{read['p99_ms']:.1f} ms ({read['per_second']:.0f}/s) | - |"
            )
    return rows


def ironic_lines(ironic) -> list[str]:
    """The section's paragraph on the Ironic history task's cost to Ironic."""
    if ironic is None:
        return ["Ironic's cost of the Ironic history task: not measured in this run.", ""]
    runs, catch_up, hour = ironic["runs"], ironic["catch_up"], ironic["per_hour"]
    cpu = [r["cpu_over_idle_seconds"] for r in runs]
    asked = sum(sum(r["requests"].values()) for r in runs) / len(runs)
    default = " (the default period)" if ironic["period"] == DEFAULT_PERIOD else ""
    return [
        f"The Ironic history task (`[ironic_history] enabled`) against a private Ironic 39 "
        f"(SQLite) of {ironic['nodes']:,} nodes, {ironic['inspected']} of them inspected "
        "(the inspection's end and the large payload's inventory written in Ironic's "
        "database, as its inspection leaves them: its API stores no inventory), through "
        f"a counting proxy. Ironic's idle CPU: {100 * ironic['idle']:.2f} % of a core, "
        "subtracted. The first run catches up: "
        f"{catch_up['ironic_cpu_seconds']:.2f} s of Ironic's CPU "
        f"({catch_up['cpu_over_idle_seconds']:.2f} s over idle), "
        f"{sum(catch_up['requests'].values())} requests ({kinds(catch_up['requests'])}) "
        f"in {catch_up['run_seconds']:.1f} s. Then {len(runs)} run(s) every "
        f"{ironic['period']:g} s{default}, each after the "
        f"{runs[0]['requests'].get('GET node/inventory', 0)} inspections a site "
        "re-inspecting each node once a day finishes in a period: Ironic's CPU over "
        f"idle per period {statistics.fmean(cpu):.3f} s (from {min(cpu):.3f} to "
        f"{max(cpu):.3f}), {asked:.0f} requests ({kinds(runs[0]['requests'])}). "
        f"Per hour: **{hour['ironic_cpu_seconds']:.0f} s of Ironic's CPU "
        f"({100 * hour['ironic_cpu_seconds'] / 3600:.2f} % of a core) and "
        f"{hour['requests']:.0f} requests**. The listing's page is 1,000 nodes, read "
        "newest first down to the newest inspection already kept: on SQLite (and "
        "MySQL), which sort never-inspected nodes last, a periodic run reads one page "
        "and the catch-up stops at the first never-inspected node. An Ironic on "
        "PostgreSQL sorts them first, and its next page after one of them skips every "
        "node above it in id (oslo.db's marker pagination drops the comparison of a "
        "NULL sort value): there each run reads the inspected nodes oldest first "
        "instead, all of them (two fields each), after two one-node requests that "
        "tell the order. Not measured here: an Ironic on PostgreSQL.",
        "",
    ]


def kinds(requests: dict) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in requests.items())


def markdown(results) -> str:
    s, cpu, machine = results["settings"], results["drift_cpu"], results["machine"]
    writes = results["reads_under_load"]["writes"]
    lines = [
        "## Inspection history and drift (bench/history.py)",
        "",
        f"{s['nodes']:,} nodes of {s['per_node']} introspections each (the large payload "
        f"and its processed data), PostgreSQL, filled in {results['fill_seconds']:.0f} s. "
        f"The API on its built-in server (`inspector api`'s, a process of its own), "
        f"{s['threads']} threads reading over HTTP (kept-alive sessions) for "
        f"{s['seconds']:g} s each: quiet, then under load, while a writer adds "
        f"introspections through the store ({writes['per_second']:.1f}/s achieved of "
        f"{writes['target_per_second']:g}/s asked, {writes['written']} in all). "
        f"The machine: {machine['cpus']} cores shared with other work (tests running), "
        f"1-minute load average {machine['load_mean']:.1f} on average during the run "
        f"(from {machine['load_min']:.1f} to {machine['load_max']:.1f}).",
        "",
        "| measure | value | target |",
        "|---|---|---|",
        f"| database per introspection | {results['bytes_per_introspection'] / 1024:.1f} KiB "
        f"(10,000 nodes of 10: {results['site_gib']:.1f} GiB) | - |",
        *read_rows(results),
        f"| drift CPU per introspection (mean / p99) | {cpu['mean_ms']:.3f} / "
        f"{cpu['p99_ms']:.3f} ms | < 5 ms |",
        "",
        *ironic_lines(results["ironic"]),
    ]
    return "\n".join(lines)


def draw(results, figure):
    reads_ax, ironic_ax = figure.subplots(1, 2)
    bars = [
        (f"{path}\n{label}", results[key][path])
        for key, label in (("reads", "quiet"), ("reads_under_load", "under load"))
        for path in ("history", "drift")
    ]
    for offset, key in ((-0.2, "p50_ms"), (0.2, "p99_ms")):
        positions = [index + offset for index in range(len(bars))]
        reads_ax.bar(positions, [read[key] for _, read in bars], 0.4, label=key[:3])
    reads_ax.set_xticks(range(len(bars)), [name for name, _ in bars])
    reads_ax.set_ylabel("ms")
    reads_ax.set_title("GET .../history and .../drift over HTTP")
    reads_ax.legend()
    ironic = results["ironic"]
    if ironic is not None:
        cpu = [r["cpu_over_idle_seconds"] for r in ironic["runs"]]
        ironic_ax.bar(range(1, len(cpu) + 1), cpu)
        ironic_ax.set_xlabel(f"run ({ironic['period']:g} s apart)")
        ironic_ax.set_ylabel("Ironic CPU s over idle, per period")
        ironic_ax.set_title(f"Ironic history task, {ironic['nodes']:,} nodes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--per-node", type=int, default=10)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--write-rate", type=float, default=20.0, help="introspections/s")
    parser.add_argument("--ironic-runs", type=int, default=5, help="0: Ironic not measured")
    parser.add_argument("--ironic-nodes", type=int, default=SITE[0])
    parser.add_argument("--inspected", type=int, default=300)
    parser.add_argument("--period", type=float, default=DEFAULT_PERIOD)
    parser.add_argument("--idle-window", type=float, default=60.0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "history.json"))
    plots.add_arguments(parser)
    args = parser.parse_args()
    plots.publish(
        args, measure, markdown, draw, "bench/history.py", "history.png", "History reads", ROOT
    )


if __name__ == "__main__":
    main()
