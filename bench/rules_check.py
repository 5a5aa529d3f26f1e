"""The rules check: 100 rules against one node, one rule against 1,000 nodes; wall time and
peak memory, through the API on PostgreSQL.

    scripts/services start postgresql; eval "$(scripts/services env)"
    .venv/bin/python bench/rules_check.py [--runs 5] [--out bench/results/rules_check.json]

POST /v1/rules/check runs in-process (the Flask app, its request deadline raised to 60 s)
on a fresh PostgreSQL database holding each node's processed data (the real large-server
payload) and on an in-process Ironic stand-in answering each node read at once: what is
measured is the check (validation, the store's reads, the evaluation, the answer), not
Ironic's reads (one GET per node; the fleet benchmark measures Ironic's calls). The rules
test the data and the node and format their values, as docs/processing.md's examples do.
Median wall time of `--runs`, then one more run under tracemalloc for the peak of Python
memory allocated during the call. Target: each under 2 s. Results go to JSON and to
docs/performance.md (`--no-doc` keeps the page, `--plot-only` writes it again
from the JSON).
"""

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
from inspector import conf as config  # noqa: E402
from inspector.api.app import create_app  # noqa: E402
from inspector.errors import NotFound  # noqa: E402
from inspector.ironic import IronicNode  # noqa: E402
from inspector.store import Store  # noqa: E402
from tests import fixtures  # noqa: E402
from tests.seed import node as seed_node  # noqa: E402

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
TARGET_SECONDS = 2.0


class Nodes:
    """The Ironic client's get_node over nodes held in memory (the only call the check makes)."""

    def __init__(self, nodes: dict[str, IronicNode]) -> None:
        self.nodes = nodes

    def get_node(self, ident: str) -> IronicNode:
        try:
            return self.nodes[ident]
        except KeyError:
            raise NotFound(f"Node {ident} was not found in Ironic") from None


def rule(index: int) -> dict:
    """A rule of three conditions (data, node, a pattern) and two formatted actions."""
    driver = "(?i)ice" if index % 2 else "(?i)mlx5"
    return {
        "description": f"rule {index}",
        "conditions": [
            {"op": "ge", "field": "inventory.cpu.count", "value": index % 8},
            {"op": "eq", "field": "node://driver", "value": "ipmi"},
            # Half the rules look for a driver the payload's NICs do not have.
            {"op": "contains", "field": "inventory.interfaces[*].driver", "value": driver},
        ],
        "actions": [
            {"action": "set-capability", "name": f"cap{index}", "value": "{node[name]}"},
            {
                "action": "set-attribute",
                "path": f"/extra/model{index}",
                "value": "{data[inventory][system_vendor][product_name]}",
            },
        ],
    }


def timed(client, body: dict, runs: int) -> dict:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        answer = client.post("/v1/rules/check", json=body, headers=V19)
        walls.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.get_data(as_text=True)
    tracemalloc.start()
    try:
        client.post("/v1/rules/check", json=body, headers=V19)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    checked = answer.json["nodes"]
    matched = sum(r["matched"] for node in checked for r in node["rules"])
    return {"wall_s": statistics.median(walls), "peak_mib": peak / 2**20, "matched": matched}


def run(args) -> dict:
    conf = config.load([], conf=config.build())
    conf.set_override("auth_strategy", "noauth")
    conf.set_override("request_timeout", 60.0, group="api")
    conf.set_override("max_rules_check_nodes", args.nodes, group="api")
    data = fixtures.load(fixtures.LARGE_SERVER)
    nodes = {}
    with fresh_database(env("INSPECTOR_TEST_POSTGRESQL_URL")) as url:
        store = Store.from_url(url)
        try:
            for index in range(args.nodes):
                node = IronicNode.from_ironic(
                    {"uuid": str(uuid.uuid4()), "name": f"node-{index}", "driver": "ipmi"}
                )
                seed_node(store, node.uuid, "finished")
                store.store_data(node.uuid, data, processed=True)
                nodes[node.uuid] = node
            client = create_app(conf, store=store, queue=None, ironic=Nodes(nodes)).test_client()
            first = next(iter(nodes))
            rules = [rule(i) for i in range(args.rules)]
            cases = {
                f"{args.rules} rules, 1 node": timed(
                    client, {"rules": rules, "node": first}, args.runs
                ),
                f"1 rule, {args.nodes} nodes": timed(
                    client, {"rules": rules[1:2], "nodes": list(nodes)}, args.runs
                ),
            }
        finally:
            store.close()
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cases": cases,
    }


def markdown(results: dict) -> str:
    lines = [
        "## Rules check (`bench/rules_check.py`)",
        "",
        "`POST /v1/rules/check` in-process on PostgreSQL, Ironic's node reads answered in "
        f"memory; {results['machine']['cpus']} CPUs shared with other work; {results['date']}. "
        "Wall: median of the runs; peak: Python memory allocated during one more call.",
        "",
        "| case | wall (s) | peak (MiB) | rules matched | target |",
        "|---|---|---|---|---|",
    ]
    for name, case in results["cases"].items():
        met = "met" if case["wall_s"] < TARGET_SECONDS else "not met"
        lines.append(
            f"| {name} | {case['wall_s']:.3f} | {case['peak_mib']:.1f} | {case['matched']} | "
            f"under {TARGET_SECONDS:g} s: **{met}** |"
        )
    lines += []
    return "\n".join(lines + plots.how_to_run(".venv/bin/python bench/rules_check.py"))


def main():
    options = {"--rules": 100, "--nodes": 1000, "--runs": 5}
    plots.text_bench(
        __doc__.splitlines()[0], "rules_check.json", options, run, markdown, "bench/rules_check.py"
    )


if __name__ == "__main__":
    main()
