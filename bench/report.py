"""The fleet report over a 10,000-node site, on PostgreSQL: wall time and peak memory.

    scripts/services start postgresql; eval "$(scripts/services env)"
    .venv/bin/python bench/report.py [--nodes 10000] [--runs 3] [--out bench/results/report.json]

A fresh database holds `--nodes` nodes, each with processed data from the real payloads
(tests/fixtures: the large synthetic server, the captured virtual machine, ironic-inspector's
4-NIC inventory, its api-ref sample, in turns) and an Ironic snapshot naming it; one in ten
carries a drift with changes. Each category is reported through the API's code path
(Store.processed_data streamed into hardware_report.build), with and without the nodes
listed: the median wall time of `--runs`, then one more run under tracemalloc for the peak
of Python memory allocated during the report, against the size of the stored data.
Target: under 10 s, and (without the nodes listed) under a tenth of the data's size in
memory, for 10,000 nodes. Results go to JSON and to docs/performance.md (`--no-doc`
keeps the page, `--plot-only` writes it again from the JSON).
"""

import json
import os
import pathlib
import platform
import statistics
import sys
import time
import tracemalloc
import uuid
from datetime import UTC, datetime

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import plots  # noqa: E402
from bench.worker import env, fresh_database  # noqa: E402
from inspector.processing import hardware_report  # noqa: E402
from inspector.store import Store  # noqa: E402
from inspector.store.lookup import DATA, NODES  # noqa: E402
from inspector.store.snapshots import SNAPSHOTS  # noqa: E402
from tests import fixtures  # noqa: E402

PAYLOADS = (fixtures.LARGE_SERVER, fixtures.IPA, fixtures.FOUR_NIC, fixtures.APIREF)
DRIFT = {"base": "b", "changes": [{"path": "firmware", "kind": "changed"}], "summary": {}}
#: Rows written per INSERT.
CHUNK = 1000
TARGET_SECONDS = 10.0
TARGET_MEMORY_SHARE = 0.1


def _rows(count: int):
    texts = [json.dumps(fixtures.load(path), sort_keys=True) for path in PAYLOADS]
    drifted = [json.dumps({**fixtures.load(path), "drift": DRIFT}) for path in PAYLOADS]
    now = datetime.now(UTC).replace(tzinfo=None)
    for index in range(count):
        node = str(uuid.UUID(int=index + 1))
        data = (drifted if index % 10 == 0 else texts)[index % len(PAYLOADS)]
        yield (
            {"uuid": node, "state": "finished", "version": 1, "updated_at": now},
            {"node_uuid": node, "processed": True, "data": data, "stored_at": now},
            {"node_uuid": node, "node": json.dumps({"name": f"node-{index}"}), "taken_at": now},
        )


def fill(store: Store, count: int) -> int:
    """`count` introspected nodes; the bytes of processed data stored."""
    size = 0
    batch: list[tuple] = []
    for row in _rows(count):
        batch.append(row)
        size += len(row[1]["data"])
        if len(batch) == CHUNK:
            _insert(store, batch)
            batch = []
    if batch:
        _insert(store, batch)
    return size


def _insert(store: Store, batch: list[tuple]) -> None:
    with store.engine.begin() as connection:
        for table, index in ((NODES, 0), (DATA, 1), (SNAPSHOTS, 2)):
            connection.execute(table.insert(), [row[index] for row in batch])


def report(store: Store, category: str, members: bool) -> dict:
    return hardware_report.build(category, store.processed_data(names=members), members=members)


def measure_one(store: Store, category: str, members: bool, runs: int) -> dict:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        result = report(store, category, members)
        walls.append(time.perf_counter() - started)
    tracemalloc.start()
    try:
        report(store, category, members)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {
        "category": category,
        "members": members,
        "wall_s": statistics.median(walls),
        "peak_mib": peak / 2**20,
        "groups": len(result["groups"]),
        "nodes": result["nodes"],
    }


def run(args) -> dict:
    with fresh_database(env("INSPECTOR_TEST_POSTGRESQL_URL")) as url:
        store = Store.from_url(url)
        try:
            started = time.perf_counter()
            size = fill(store, args.nodes)
            filled = time.perf_counter() - started
            cases = [
                measure_one(store, category, members, args.runs)
                for category in hardware_report.CATEGORIES
                for members in (False, True)
            ]
        finally:
            store.close()
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "nodes": args.nodes,
        "data_mib": size / 2**20,
        "fill_s": filled,
        "cases": cases,
    }


def markdown(results: dict) -> str:
    data = results["data_mib"]
    worst_wall = max(case["wall_s"] for case in results["cases"])
    # With the nodes listed, the lists are the answer, and grow with it: the bound on
    # what streaming holds is taken without them.
    worst_peak = max(case["peak_mib"] for case in results["cases"] if not case["members"])
    wall_met = "met" if worst_wall < TARGET_SECONDS else "not met"
    memory_met = "met" if worst_peak < TARGET_MEMORY_SHARE * data else "not met"
    lines = [
        "## Fleet report (`bench/report.py`)",
        "",
        f"{results['nodes']:,} nodes on PostgreSQL, {data:.0f} MiB of processed data (the real "
        f"payloads in turns); {results['machine']['cpus']} CPUs shared with other work; "
        f"{results['date']}. Wall: median of the runs; peak: Python memory allocated during "
        "one more run (tracemalloc).",
        "",
        "| by | nodes listed | wall (s) | peak (MiB) | groups |",
        "|---|---|---|---|---|",
    ]
    for case in results["cases"]:
        lines.append(
            f"| {case['category']} | {'yes' if case['members'] else 'no'} | "
            f"{case['wall_s']:.2f} | {case['peak_mib']:.1f} | {case['groups']} |"
        )
    lines += [
        "",
        f"Slowest {worst_wall:.2f} s (target under {TARGET_SECONDS:g} s: **{wall_met}**); "
        f"largest peak without the nodes listed {worst_peak:.1f} MiB, {worst_peak / data:.1%} "
        f"of the data (target under {TARGET_MEMORY_SHARE:.0%}: **{memory_met}**). With the "
        "nodes listed, the peak is the lists themselves (every PCI group of a node names it).",
    ]
    return "\n".join(lines + plots.how_to_run(".venv/bin/python bench/report.py"))


def main():
    options = {"--nodes": 10_000, "--runs": 3}
    plots.text_bench(
        __doc__.splitlines()[0], "report.json", options, run, markdown, "bench/report.py"
    )


if __name__ == "__main__":
    main()
