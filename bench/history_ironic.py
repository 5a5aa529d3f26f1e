"""Ironic's cost of the Ironic history task ([ironic_history] enabled) at a site: its CPU
seconds and requests per run, and per hour at the task's period.

A private Ironic 39 (bench/pxe/ironic_site.py's PxeIronic, on SQLite) gets `nodes`
nodes, `inspected` of them with an inspection: Ironic's API has no call that stores an
inventory, so `inspection_finished_at` and a `node_inventory` row (the large real-format
payload: its inventory, the rest as plugin data) are written in Ironic's database in
bulk, as ironic_site seeds the nodes and as Ironic's own inspection leaves them. The
task (`IronicHistory` on a real client built as the workers build it, its calls through
a counting proxy) runs once to catch up, then `runs` times, `period` seconds apart,
each after the inspections a site re-inspecting every node once a day finishes in a
period. Ironic's CPU (its processes' utime+stime) over each period, minus its idle CPU
over as long (measured first with nothing calling it), is the task's.

Called by bench/history.py (`--ironic-runs 0` skips it); needs RabbitMQ
(`scripts/services env`: Ironic's notifications go there, as in the PXE benchmarks).
"""

import collections
import datetime
import json
import os
import pathlib
import sqlite3
import tempfile
import time

from bench.fleet.proxy import Proxy
from bench.pxe import reconcile
from bench.pxe.ironic_site import PxeIronic, node_name
from bench.pxe_cluster import ironic_share
from bench.pxe_filter import TOPIC, forget_notifications
from inspector import conf as config
from inspector.coordination.election import Leadership
from inspector.ironic.lazy import LazyIronic
from inspector.periodic.ironic_history import IronicHistory
from inspector.store import Store
from tests import fixtures

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIRECTORY = ROOT / ".services" / "histbench-ironic"
PORT = 6407
DAY = 86400.0


def stored_inventory(version: int) -> tuple[str, str]:
    """(inventory, plugin data) as Ironic keeps them: the large payload, its firmware
    version `version` (so that each re-inspection drifts)."""
    payload = fixtures.load(fixtures.LARGE_SERVER)
    inventory = payload.pop("inventory")
    inventory["system_vendor"]["firmware"]["version"] = f"2.{version}"
    return json.dumps(inventory), json.dumps(payload)


def inspect_in_database(ironic: PxeIronic, indexes: list[int], version: int) -> None:
    """Nodes `indexes` inspected just now (the first last, a millisecond apart), as
    Ironic's inspection ends: their inspection_finished_at set and their one inventory
    row replaced, in one transaction."""
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    inventory, plugin_data = stored_inventory(version)
    with sqlite3.connect(ironic.database, timeout=60) as db:
        for position, index in enumerate(indexes):
            stamp = (now - datetime.timedelta(milliseconds=position)).isoformat(
                sep=" ", timespec="microseconds"
            )
            node_id = db.execute(
                "SELECT id FROM nodes WHERE name = ?", (node_name(index),)
            ).fetchone()[0]
            db.execute("UPDATE nodes SET inspection_finished_at = ? WHERE id = ?", (stamp, node_id))
            db.execute("DELETE FROM node_inventory WHERE node_id = ?", (node_id,))
            db.execute(
                "INSERT INTO node_inventory (inventory_data, plugin_data, node_id, version, "
                "created_at) VALUES (?, ?, ?, '1.0', ?)",
                (inventory, plugin_data, node_id, stamp),
            )


def forget_inspections(ironic: PxeIronic) -> None:
    """No node inspected: none left by an earlier run, nor copied from node 0 by `seed`."""
    with sqlite3.connect(ironic.database, timeout=60) as db:
        db.execute("UPDATE nodes SET inspection_finished_at = NULL")
        db.execute("DELETE FROM node_inventory")


def client(url: str, state_path: str) -> LazyIronic:
    """The client the workers' periodic tasks use (`inspector.services`), on `url`."""
    conf = config.load([], conf=config.build())
    conf.set_override("state_path", state_path)
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", url, group="ironic")
    return LazyIronic(conf)


def leadership() -> Leadership:
    return Leadership("ironic_history", "histbench", 1, DAY, time.monotonic())


def one_run(ironic: PxeIronic, proxy: Proxy, task: IronicHistory, period: float) -> dict:
    """The task's run and Ironic's CPU over `period` seconds from its start (over the
    run only with period 0), the requests it made by kind."""
    proxy.ledger.reset()
    cpu, began = reconcile._ironic_cpu(ironic), time.monotonic()
    outcome = task.run(leadership())
    took = time.monotonic() - began
    time.sleep(max(0.0, period - took))  # the rest of the period: Ironic's CPU after it
    window = time.monotonic() - began
    kinds = collections.Counter(call.kind for call in proxy.ledger.reset())
    return {
        "outcome": outcome,
        "run_seconds": took,
        "window_seconds": window,
        "ironic_cpu_seconds": reconcile._ironic_cpu(ironic) - cpu,
        "requests": dict(sorted(kinds.items())),
    }


def over_idle(run: dict, idle: float) -> dict:
    """`run` with its CPU minus Ironic's idle CPU over the same window."""
    excess = run["ironic_cpu_seconds"] - idle * run["window_seconds"]
    return run | {"cpu_over_idle_seconds": excess}


def periodic(ironic, proxy, task, args, idle: float) -> list[dict]:
    """`args.ironic_runs` runs a period apart, each after the inspections a site
    re-inspecting each node once a day finishes in a period (cycling over the nodes)."""
    per_period = round(args.ironic_nodes * args.period / DAY)
    runs, cursor = [], 0
    for number in range(1, args.ironic_runs + 1):
        indexes = [(cursor + i) % args.ironic_nodes for i in range(per_period)]
        cursor += per_period
        inspect_in_database(ironic, indexes, number)
        runs.append(over_idle(one_run(ironic, proxy, task, args.period), idle))
    return runs


def per_hour(runs: list[dict], period: float) -> dict:
    count = 3600.0 / period
    cpu = sum(r["cpu_over_idle_seconds"] for r in runs) / len(runs)
    requests = sum(sum(r["requests"].values()) for r in runs) / len(runs)
    return {"ironic_cpu_seconds": cpu * count, "requests": requests * count}


def site(ironic: PxeIronic, args) -> dict:
    """The site: `args.ironic_nodes` nodes, `args.inspected` inspected (in Ironic's
    database), and Ironic's idle CPU share over `args.idle_window` seconds."""
    for node in ironic.enroll(1):  # the node the others are copies of
        ironic.reset(node.uuid)
    ironic.seed(args.ironic_nodes)
    forget_inspections(ironic)
    inspect_in_database(ironic, list(range(args.inspected)), 0)
    nodes, _ = ironic.count()
    return {
        "nodes": nodes,
        "inspected": args.inspected,
        "idle": ironic_share(ironic, args.idle_window),
    }


def measure(args, store: Store) -> dict:
    """The catch-up and periodic runs of the task on `store`, Ironic's cost of each."""
    rabbitmq = os.environ["INSPECTOR_TEST_RABBITMQ_URL"]
    ironic = PxeIronic(DIRECTORY, PORT, TOPIC)
    proxy = Proxy(ironic.url, lambda _node, _target: None)
    ironic.start()
    proxy.start()
    try:
        result = site(ironic, args)
        with tempfile.TemporaryDirectory() as state_path:
            task = IronicHistory(store, client(proxy.url, state_path))
            catch_up = over_idle(one_run(ironic, proxy, task, 0.0), result["idle"])
            runs = periodic(ironic, proxy, task, args, result["idle"])
    finally:
        proxy.stop()
        ironic.stop()
        forget_notifications(rabbitmq)
    return result | {
        "period": args.period,
        "reinspected_per_day": args.ironic_nodes,
        "catch_up": catch_up,
        "runs": runs,
        "per_hour": per_hour(runs, args.period),
    }
