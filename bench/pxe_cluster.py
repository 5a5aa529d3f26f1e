"""Benchmark: Ironic's CPU spent by three `inspector pxe-filter` hosts (whitelist from
Ironic, defaults: the leader alone lists the ports and shares them, every port each
`--full-period`, those changed in between; without notifications it polls the nodes
under inspection every second), as % of one core, with Ironic's notifications off, on
with an idle Ironic (none sent), and on with one just sent before the window (flowing),
at each `--sizes` of enrolled nodes.

Ironic's CPU is its processes' utime+stime over a window of `--window` seconds with the
three filters running, minus the same over a window with none (Ironic idle). The hosts'
Ironic calls, through a counting proxy each, say who listed what. A window sees a full
listing of the ports only by chance: the CPU of one, measured on its own, is added
spread over `--full-period` (`with_full_listings_percent`). Needs RabbitMQ and
Redis (`scripts/services env`). Writes bench/results/pxe_filter_cluster.json.

    .venv/bin/python -m bench.pxe_cluster --sizes 1000,10000
"""

import argparse
import datetime
import json
import os
import pathlib
import sys
import time

from bench.pxe import filters, reconcile
from bench.pxe.ironic_site import PxeIronic
from bench.pxe_filter import TOPIC, forget_notifications

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "pxe_filter_cluster.json"
HOSTS = 3
#: Seconds the filters run before the window opens (each lists the ports once at start:
#: at 10,000 ports, three listings at once take Ironic about 20 s).
WARM_UP = 40.0


def listing_cost(ironic: PxeIronic, url: str, repeat: int, *, pages: bool = True) -> float:
    """Ironic's CPU seconds for one listing from `url` (following `next` with `pages`),
    the least of `repeat` tries: what each listing the filters make costs it."""
    costs = []
    for _ in range(repeat):
        before, next_url = reconcile._ironic_cpu(ironic), url
        while next_url:
            body = ironic.session.get(next_url, timeout=120).json()
            next_url = body.get("next") if pages else None
        costs.append(reconcile._ironic_cpu(ironic) - before)
    return min(costs)


def listing_costs(ironic: PxeIronic) -> dict:
    """Ironic's CPU seconds for the leader's listing of every port and for one of the
    ports changed (by created_at, then by updated_at: two short sorted requests)."""
    fields = "uuid,node_uuid,address"
    changes = [
        f"{ironic.url}/v1/ports?fields={fields},{key}&sort_key={key}&sort_dir=desc&limit=50"
        for key in ("created_at", "updated_at")
    ]
    return {
        "full": listing_cost(ironic, f"{ironic.url}/v1/ports?fields={fields}&limit=1000", 2),
        # One page each: the filters stop at the first port older than they look for.
        "changes": sum(listing_cost(ironic, url, 5, pages=False) for url in changes),
    }


def ironic_share(ironic: PxeIronic, window: float) -> float:
    """Ironic's CPU over the next `window` seconds, as a fraction of one core."""
    before, began = reconcile._ironic_cpu(ironic), time.monotonic()
    time.sleep(window)  # the measured window itself
    return (reconcile._ironic_cpu(ironic) - before) / (time.monotonic() - began)


#: The runs: whether the filters listen to Ironic's notifications, and whether one comes
#: just before the window (an idle Ironic sends none, so the filters cannot tell a bus
#: without notifications from a quiet one; one heard makes them poll slowly for
#: `notification_quiet_period`, 60 s, longer than the window).
RUNS = {"off": (False, False), "on, idle": (True, False), "on, flowing": (True, True)}


def notify(ironic: PxeIronic, node_uuid: str) -> None:
    """A change Ironic notifies (baremetal.node.update.end): a mark in a node's extra."""
    patch = [{"op": "add", "path": "/extra/pxebench", "value": str(time.time())}]
    answer = ironic.session.patch(f"{ironic.url}/v1/nodes/{node_uuid}", json=patch, timeout=60)
    answer.raise_for_status()


def cluster(args, ironic: PxeIronic, size: int, run: str, services: dict, node_uuid: str) -> dict:
    notifications, flowing = RUNS[run]
    forget_notifications(services["rabbitmq_url"])
    hosts = [
        filters.Ours(
            ironic,
            args.directory / f"{size}-{notifications}-host{i}",
            period=None,
            notifications=notifications,
            topic=TOPIC,
            host=f"pxebench{i}",
            single_host=False,
            full_period=args.full_period,
            **services,
        )
        for i in range(1, HOSTS + 1)
    ]
    try:
        for host in hosts:
            host.config.parent.mkdir(parents=True, exist_ok=True)
            host.start()
        filters.wait_for(lambda: all(h.ready() for h in hosts), 60, "the filters ready")
        time.sleep(WARM_UP)  # past each host's first listing of every port
        if flowing:
            notify(ironic, node_uuid)
            time.sleep(1.0)  # the notification's way to the leader, and Ironic's work done
        marks = [len(h.proxy.ledger.calls()) for h in hosts]
        share = ironic_share(ironic, args.window)
        calls = [h.proxy.ledger.calls()[mark:] for h, mark in zip(hosts, marks, strict=True)]
        assert all(h.alive() for h in hosts), "\n".join(h.tail() for h in hosts)
    finally:
        for host in hosts:
            host.stop()
    return {
        "run": run,
        "notifications": notifications,
        "ironic_share": share,
        "calls": [
            {
                kind: sum(c.kind == kind for c in made)
                for kind in (filters.NODES, filters.PORTS, filters.PORT_CHANGES)
            }
            for made in calls
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--port", type=int, default=6406)
    parser.add_argument(
        "--full-period",
        type=float,
        default=600.0,
        help="the filters' [firewall] full_port_listing_period (their default)",
    )
    parser.add_argument(
        "--directory", type=pathlib.Path, default=ROOT / ".services" / "pxebench-cluster"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    services = {
        "rabbitmq_url": os.environ["INSPECTOR_TEST_RABBITMQ_URL"],
        "redis_url": os.environ["INSPECTOR_TEST_REDIS_URL"],
    }
    results: dict = {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_before": round(os.getloadavg()[0], 2),
        "window": args.window,
        "sizes": [],
    }
    ironic = PxeIronic(args.directory / "ironic", args.port, TOPIC)
    ironic.start()
    try:
        [node] = ironic.enroll(1)  # the node the others are copies of
        ironic.reset(node.uuid)
        for size in (int(s) for s in args.sizes.split(",") if s):
            ironic.seed(size)
            nodes, ports = ironic.count()
            idle = ironic_share(ironic, args.window)
            costs = listing_costs(ironic)
            runs = [cluster(args, ironic, size, run, services, node.uuid) for run in RUNS]
            for run in runs:
                run["over_idle_percent"] = round(100 * (run["ironic_share"] - idle), 2)
                # The window sees a full listing only by chance (one every
                # full_port_listing_period): its cost spread over that period instead.
                run["with_full_listings_percent"] = round(
                    100 * (run["ironic_share"] - idle + costs["full"] / args.full_period), 2
                )
            results["sizes"].append(
                {"nodes": nodes, "ports": ports, "idle": idle, "listing_cpu": costs, "runs": runs}
            )
            RESULTS.write_text(json.dumps(results, indent=2) + "\n")
            print(json.dumps(results["sizes"][-1]), flush=True)
    finally:
        ironic.stop()
        forget_notifications(services["rabbitmq_url"])
    results["load_after"] = round(os.getloadavg()[0], 2)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
