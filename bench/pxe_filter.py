"""Benchmark: our HA PXE filter (`inspector pxe-filter`, whitelist from Ironic) against
Ironic 39's own `ironic-pxe-filter`, side by side on the same private Ironic.

- Latency, both filters running at once, each writing its own dnsmasq hostsdir: from
  `inspect` to a node's MAC allowed, and from the ramdisk's /v1/continue_inspection to
  it denied, over `--nodes` nodes, at each filter's default settings and at a 5 s
  period (and ours with notifications off at 5 s: polling alone).
- Cost of one full reconcile at each `--sizes` of enrolled nodes, each filter alone:
  wall, CPU of the filter and of Ironic, and what it asks of Ironic.

Needs RabbitMQ and Redis (INSPECTOR_TEST_RABBITMQ_URL, INSPECTOR_TEST_REDIS_URL, as
`scripts/services env` prints them). Writes bench/results/pxe_filter.json, the section
of docs/performance.md between its markers and docs/images/pxe-filter.png.

    .venv/bin/python -m bench.pxe_filter                 # everything
    .venv/bin/python -m bench.pxe_filter --sizes 1000    # a quicker run
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import time

import kombu

from bench.pxe import filters, latency, reconcile, report
from bench.pxe.ironic_site import PxeIronic

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "pxe_filter.json"
#: A run of ours with notifications off at the defaults (1 s polls of the nodes under
#: inspection): a run with `--runs 'defaults polling only' --no-doc`, its results kept
#: under this name.
POLLING = ROOT / "bench" / "results" / "pxe_filter_polling.json"
DOC = ROOT / "docs" / "performance.md"
IMAGE = ROOT / "docs" / "images" / "pxe-filter.png"
#: The notification topic of the benchmark's Ironic (not the tests' Ironic's).
TOPIC = "pxebench_notifications"
#: The latency runs: name, ironic-pxe-filter's period, ours, whether ours listens to
#: Ironic's notifications (None: the filter's default period).
RUNS = {
    "defaults": (None, None, True),
    "defaults polling only": (None, None, False),
    "5 s period": (5.0, 5.0, True),
    "5 s polling only": (5.0, 5.0, False),
}
DEFAULT_PERIODS = {report.THEIRS: 45.0, report.OURS: 15.0}
#: Reconciles in each cost window, and the period both filters run at there.
RECONCILES = 4
RECONCILE_PERIOD = 5.0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=50, help="nodes whose latency is measured")
    parser.add_argument(
        "--sizes", default="1000,10000", help="enrolled nodes for the reconcile cost"
    )
    parser.add_argument("--runs", default=",".join(RUNS), help="latency runs: " + ", ".join(RUNS))
    parser.add_argument(
        "--spacing", type=float, default=1.0, help="seconds between two nodes' starts"
    )
    parser.add_argument("--port", type=int, default=6405, help="the benchmark's Ironic's port")
    parser.add_argument("--directory", type=pathlib.Path, default=ROOT / ".services" / "pxebench")
    parser.add_argument(
        "--theirs-only", action="store_true", help="measure ironic-pxe-filter alone"
    )
    parser.add_argument("--no-doc", action="store_true", help="write the results JSON only")
    parser.add_argument(
        "--plot-only",
        action="store_true",
        help="measure nothing: redraw the plot and the page's section from the saved results",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.runs.split(",") if name not in RUNS]
    if unknown:
        parser.error(f"unknown --runs {', '.join(unknown)}; known: {', '.join(RUNS)}")
    return args


def ours_available() -> bool:
    command = [str(ROOT / ".venv" / "bin" / "inspector"), "pxe-filter", "--help"]
    return subprocess.run(command, check=False, capture_output=True, cwd=ROOT).returncode == 0


def forget_notifications(rabbitmq_url: str) -> None:
    """Drop the queue our filter keeps for Ironic's notifications between its runs, and
    the one Ironic's notifier fills for whoever reads its topic."""
    with kombu.Connection(rabbitmq_url, connect_timeout=5) as connection:
        channel = connection.channel()
        for queue in (f"{TOPIC}_firewall.pxebench.ironic", f"{TOPIC}.info"):
            channel.queue_delete(queue)


def latency_run(args, ironic: PxeIronic, nodes, name: str, ours: bool, services: dict) -> dict:
    theirs_period, ours_period, notifications = RUNS[name]
    directory = args.directory / "latency"
    watched: list[filters.Filter] = [filters.Theirs(ironic, directory, theirs_period)]
    if ours:
        forget_notifications(services["rabbitmq_url"])
        watched.append(
            filters.Ours(
                ironic,
                directory,
                period=ours_period,
                notifications=notifications,
                topic=TOPIC,
                **services,
            )
        )
    periods = {
        watched[0].name: theirs_period or DEFAULT_PERIODS[report.THEIRS],
        report.OURS: ours_period or DEFAULT_PERIODS[report.OURS],
    }
    print(f"latency run {name!r}: {', '.join(f.name for f in watched)}", flush=True)
    try:
        for f in watched:
            f.start()
        figures = latency.measure(
            ironic, nodes, watched, spacing=args.spacing, longest_period=max(periods.values())
        )
    finally:
        for f in watched:
            f.stop()
    ironic_itself = figures.pop("ironic")
    for f in watched:
        figures[f.name]["period"] = periods[f.name]
        figures[f.name]["notifications"] = f.name == report.OURS and notifications
    return {
        "name": name,
        "notifications": notifications,
        "filters": figures,
        "ironic": ironic_itself,
    }


def reconcile_size(args, ironic: PxeIronic, size: int, ours: bool, services: dict) -> dict:
    started = time.monotonic()
    added = ironic.seed(size)
    seeded = time.monotonic() - started
    nodes, ports = ironic.count()
    print(f"reconcile at {nodes} nodes ({added:+d} in {seeded:.1f} s), {ports} ports", flush=True)
    directory = args.directory / f"reconcile-{size}"
    result = {"nodes": nodes, "ports": ports, "seeded": added, "seed_seconds": round(seeded, 2)}
    theirs = filters.Theirs(ironic, directory, RECONCILE_PERIOD)
    result[report.THEIRS] = reconcile.theirs(theirs, ironic, nodes, RECONCILES)
    if ours:
        forget_notifications(services["rabbitmq_url"])
        # A full reconcile each period (every port listed, not only those changed since,
        # which the notifications make unneeded): the cost measured is the full one.
        f = filters.Ours(
            ironic,
            directory,
            period=RECONCILE_PERIOD,
            full_period=RECONCILE_PERIOD,
            topic=TOPIC,
            **services,
        )
        result[report.OURS] = reconcile.ours(f, ironic, nodes, RECONCILES, RECONCILE_PERIOD)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.plot_only:
        report.update_doc(with_polling(json.loads(RESULTS.read_text())), DOC, IMAGE)
        return 0
    services = {
        "rabbitmq_url": os.environ["INSPECTOR_TEST_RABBITMQ_URL"],
        "redis_url": os.environ["INSPECTOR_TEST_REDIS_URL"],
    }
    sizes = [int(s) for s in args.sizes.split(",") if s]
    ours = not args.theirs_only and ours_available()
    results: dict = {
        "command": shlex.join(
            ["python", "-m", "bench.pxe_filter", *(sys.argv[1:] if argv is None else argv)]
        ),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "load_before": round(os.getloadavg()[0], 2),
        },
        "latency_nodes": args.nodes,
        "latency": [],
        "reconcile": [],
    }
    if not ours:
        results["left_undone"] = (
            "`inspector pxe-filter` (whitelist from Ironic) is not in this checkout"
        )
    ironic = PxeIronic(args.directory / "ironic", args.port, TOPIC)
    ironic.start()
    try:
        results["machine"]["ironic"] = _ironic_version(ironic)
        nodes = ironic.enroll(args.nodes)
        for node in nodes:
            ironic.reset(node.uuid)
        ironic.seed(sizes[0])
        for name in args.runs.split(","):
            if not ours and not RUNS[name][2]:
                continue  # ours without notifications: nothing of theirs changes
            results["latency"].append(latency_run(args, ironic, nodes, name, ours, services))
            _save(results)
        for size in sizes:
            results["reconcile"].append(reconcile_size(args, ironic, size, ours, services))
            _save(results)
    finally:
        ironic.stop()
        forget_notifications(services["rabbitmq_url"])
    results["machine"]["load_after"] = round(os.getloadavg()[0], 2)
    results["ratios"] = report.ratios(results)
    results["targets"] = report.targets(results)
    _save(results)
    if not args.no_doc:
        report.update_doc(with_polling(results), DOC, IMAGE)
    print(json.dumps({"ratios": results["ratios"], "targets": results["targets"]}, indent=2))
    return 0


def with_polling(results: dict) -> dict:
    """The results, plus the latency runs of the saved polling run (POLLING) that this
    run does not have, named with their date: the plot then shows ours without
    notifications at its defaults beside the rest."""
    if not POLLING.exists():
        return results
    polling = json.loads(POLLING.read_text())
    names = {run["name"] for run in results.get("latency") or []}
    when = (polling.get("machine") or {}).get("when", "?")[:10]
    extra = [
        {**run, "name": run["name"].replace(" polling only", ", polls") + f" ({when[5:]})"}
        for run in polling.get("latency") or []
        if run["name"] not in names
    ]
    also = (
        f"The runs named `({when[5:]})` come from another run of {when} "
        f"(`{POLLING.relative_to(ROOT)}`: notifications off, the defaults; load average "
        f"{(polling.get('machine') or {}).get('load_before', '?')})."
    )
    latency = [*(results.get("latency") or []), *extra]
    return {**results, "latency": latency, "also": also} if extra else results


def _save(results: dict) -> None:
    """The results so far (a run that fails later keeps what it measured)."""
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


def _ironic_version(ironic: PxeIronic) -> str:
    """The version of the ironic package in Ironic's own virtualenv."""
    script = "from importlib import metadata; print(metadata.version('ironic'))"
    python = ironic.venv / "bin" / "python"
    return subprocess.run(
        [str(python), "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
