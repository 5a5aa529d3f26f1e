"""The fleet benchmark's command: `python -m bench.fleet` (or bench/fleet/run, which also
installs and starts what it needs). Runs the scenarios against our service,
ironic-inspector 12.5.0 and the Ironic floor on the fleet's own Ironic, writes the JSON
results and the docs/performance.md section with its plots.

Scenarios (`--scenarios`, comma-separated; all by default):
  compare   the floor, ours and the peer on the same batch at the same concurrency
            (default 40 nodes at 8), the issue's headline comparison; at each boot
            delay of --compare-boot-delays (0 s, the calls alone, and 1 s)
  single    one introspection, ours and the peer: when each step happened
  batches   batches (default 200 and 1,000) started at once, ours with 1 and 2 worker
            processes, and the peer
  kill      the largest batch on 2 worker processes, one killed with kill -9 half-way
  cluster   the largest batch on the local cluster (scripts/cluster: 3 APIs behind
            HAProxy, 3 hosts with a worker and an nftables firewall each), then again
            with one host's worker killed with kill -9 half-way
  engine    ours against a fake Ironic answering from memory (no Ironic cost), 1 and 2
            worker processes, beside the sum-of-parts ceiling measured in the same run;
            default 1,000 nodes whose ramdisks post at once (--engine-boot-delay)
"""

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import shlex
import signal
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.fleet import peer, report, targets  # noqa: E402
from bench.fleet.scenarios import ALL, IRONIC_VERSION, Bench  # noqa: E402


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fleet", description=__doc__.splitlines()[0]
    )
    ints = lambda text: [int(v) for v in text.split(",") if v]  # noqa: E731
    parser.add_argument("--scenarios", default=",".join(ALL))
    parser.add_argument("--site", type=int, default=1000, help="nodes enrolled in Ironic")
    parser.add_argument("--batch", type=int, default=40, help="nodes of the compare batch")
    parser.add_argument("--concurrency", type=int, default=8, help="of the compare batch")
    parser.add_argument(
        "--compare-boot-delays",
        type=lambda text: [float(v) for v in text.split(",") if v],
        default=[0.0, 1.0],
        help="boot delays (seconds) of the compare batch, each run in turn",
    )
    parser.add_argument("--batches", type=ints, default=[200, 1000])
    parser.add_argument("--engine-batch", type=int, default=1000, help="nodes, engine alone")
    parser.add_argument(
        "--engine-boot-delay",
        type=float,
        default=0.0,
        help="boot delay of the engine alone: 0 s, so the batch times the engine, not an "
        "idle second that is neither engine nor Ironic (the fake powers at once, no lock)",
    )
    parser.add_argument("--workers", type=ints, default=[1, 2], help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker process")
    parser.add_argument("--queue", choices=("rabbitmq", "redis"), default="rabbitmq")
    parser.add_argument(
        "--boot-delay",
        type=float,
        default=1.0,
        help="seconds from power-on to the ramdisk's post (the floor waits as long), "
        "except in the compare and engine scenarios",
    )
    parser.add_argument("--deadline-per-node", type=float, default=10.0, help="seconds")
    parser.add_argument("--no-peer", action="store_true", help="skip ironic-inspector")
    parser.add_argument(
        "--ironic-dir",
        help="the fleet's Ironic, kept between runs; default .services/fleet-ironic-<site>: "
        "one per site size, so that Ironic holds the site and no more",
    )
    parser.add_argument("--ironic-port", type=int, default=6395)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "fleet.json"))
    parser.add_argument("--doc", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--images", default=str(ROOT / "docs" / "images"))
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/")
    parser.add_argument(
        "--plot-only",
        action="store_true",
        help="measure nothing: redraw the plots and the page's section from --out",
    )
    parser.add_argument(
        "--merge",
        metavar="RESULTS",
        help="keep the scenarios of this earlier results file that this run does not "
        "run again (the doc then says both commands)",
    )
    args = parser.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    if args.ironic_dir is None:
        args.ironic_dir = str(ROOT / ".services" / f"fleet-ironic-{args.site}")
    unknown = set(args.scenarios) - set(ALL)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args


def merge(results: dict, earlier: dict) -> None:
    """Add to `results` the scenarios of `earlier` this run did not run again: the same
    scenario (name) with the same target, worker count and site size is replaced, any
    other is kept."""
    again = {_key(s) for s in results["scenarios"]}
    kept = [s for s in earlier["scenarios"] if _key(s) not in again]
    results["scenarios"] = kept + results["scenarios"]
    results["command"] = f"{earlier.get('command')}\n{results['command']}"
    results["machine"]["earlier_run"] = earlier.get("machine", {}).get("when")


def _key(scenario: dict) -> tuple:
    # The engine runs on the fake Ironic: the site's size is not part of what it measures.
    site = None if scenario["target"] == "engine" else scenario.get("enrolled")
    return scenario["name"], scenario["target"], scenario.get("workers"), site


def _leave(signum: int, _frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # the ExitStack stops what we started


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
    if args.plot_only:
        results = json.loads(pathlib.Path(args.out).read_text())
        report.update_doc(results, pathlib.Path(args.doc), pathlib.Path(args.images))
        return results
    # Started in the background, SIGINT may be ignored: both signals clean up.
    signal.signal(signal.SIGTERM, _leave)
    signal.signal(signal.SIGINT, _leave)
    if not args.no_peer:
        peer.ensure_installed()
    with contextlib.ExitStack() as stack:
        bench = Bench(args, stack)
        for scenario in args.scenarios:
            getattr(bench, scenario)()
        scenarios = bench.results
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "ironic": IRONIC_VERSION,
            "peer": "ironic-inspector 12.5.0",
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        },
        "command": "python -m bench.fleet " + shlex.join(sys.argv[1:] if argv is None else argv),
        "settings": {
            "queue": args.queue,
            "boot_delay": args.boot_delay,
            "worker_threads": args.threads,
        },
        "scenarios": scenarios,
    }
    if args.merge:
        merge(results, json.loads(pathlib.Path(args.merge).read_text()))
    results["targets"] = targets.evaluate(results)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    if not args.no_doc:
        report.update_doc(results, pathlib.Path(args.doc), pathlib.Path(args.images))
    for target in results["targets"]:
        print(f"{'met' if target['met'] else 'NOT met'}: {target['name']}: {target['detail']}")
    return results


if __name__ == "__main__":
    main()
