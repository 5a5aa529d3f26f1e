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
  engine    ours against a fake Ironic answering from memory (no Ironic cost), 1 and 2
            worker processes, beside the sum-of-parts ceiling measured in the same run
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
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import worker as worker_bench  # noqa: E402
from bench.fleet import floor, ours, peer, report, targets  # noqa: E402
from bench.fleet.batch import Batch, cpu_seconds, percentiles  # noqa: E402
from bench.fleet.fake_ironic import FakeIronic  # noqa: E402
from bench.fleet.ironic import FleetIronic, Node  # noqa: E402
from bench.fleet.proxy import Proxy, summary  # noqa: E402
from bench.fleet.ramdisk import Ramdisks, load_template  # noqa: E402
from bench.worker import env, fresh_database  # noqa: E402

ALL = ("compare", "single", "batches", "kill", "engine")
#: Transitions of one introspection (inspect, wait, continue, finish), as bench/worker.py
#: counts them for the sum-of-parts ceiling.
TRANSITIONS = 4
IRONIC_VERSION = "39.0.0"
#: Operations per part of the ceiling.
PARTS = 300


def spread(nodes: list[Node], count: int) -> list[Node]:
    """`count` nodes spread evenly over the site."""
    step = max(1, len(nodes) // count)
    return nodes[::step][:count]


class Bench:
    """The fleet's Ironic, the proxy in front of it, the ramdisks, and the scenarios."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
        self.args = args
        self.admin_url = env("INSPECTOR_TEST_POSTGRESQL_URL")
        self.redis_url = env("INSPECTOR_TEST_REDIS_URL")
        self.queue_url = (
            env("INSPECTOR_TEST_RABBITMQ_URL") if args.queue == "rabbitmq" else self.redis_url
        )
        self.work = pathlib.Path(stack.enter_context(tempfile.TemporaryDirectory()))
        self.ironic = FleetIronic(pathlib.Path(args.ironic_dir), args.ironic_port).start()
        stack.callback(self.ironic.stop)
        self.site = self.ironic.site(args.site)
        self.template = load_template()
        self.ramdisks = Ramdisks(boot_delay=args.boot_delay)
        stack.callback(self.ramdisks.stop)
        self.batch: Batch | None = None
        self.proxy = Proxy(self.ironic.url, self._on_power).start()
        stack.callback(self.proxy.stop)
        self.results: list[dict] = []

    def _on_power(self, node: str | None, target: str) -> None:
        if self.batch is not None:
            self.batch.on_power(node, target)

    def record(self, name: str, target: str, figures: dict, **extra: object) -> dict:
        entry = {"name": name, "target": target, "enrolled": len(self.site), **extra, **figures}
        self.results.append(entry)
        line = (
            f"{name:>12} {target:>16}: {figures.get('batch', '?')} in "
            f"{figures.get('batch_seconds', 0):.1f} s, finished {figures.get('finished')}, "
            f"errors {figures.get('errors')}, calls/introspection "
            f"{figures.get('ironic_calls_per_introspection', 0):.1f}"
        )
        print(line, flush=True)
        return entry

    # -------------------------------------------------------------- targets

    def run_batch(self, url: str, nodes: list[Node], concurrency: int, pids, **kw) -> dict:
        deadline = self.args.deadline_per_node * len(nodes) / min(concurrency, 8) + 120
        self.batch = Batch(
            url,
            nodes,
            concurrency,
            self.ramdisks,
            self.proxy,
            self.template,
            pids,
            deadline,
            **kw,
        )
        try:
            return self.batch.run()
        finally:
            self.batch = None

    def ours(self, name: str, nodes: list[Node], concurrency: int, workers: int, kill=False):
        with fresh_database(self.admin_url) as database_url:
            with ours.running(
                self.work / f"{name}-ours-{workers}",
                database_url=database_url,
                queue_url=self.queue_url,
                redis_url=self.redis_url,
                ironic_url=self.proxy.url,
                workers=workers,
                threads=self.args.threads,
            ) as deployment:
                figures = self.run_batch(
                    deployment.url,
                    nodes,
                    concurrency,
                    deployment.pids,
                    backend_seconds=deployment.backend_seconds,
                    kill=deployment.kill_worker if kill else None,
                )
                if figures["unfinished"] or figures["errors"]:
                    print(deployment.logs()[-6000:], file=sys.stderr)
        return self.record(
            name,
            "inspector",
            figures,
            workers=workers,
            worker_threads=self.args.threads,
            killed_worker=kill,
        )

    def peer(self, name: str, nodes: list[Node], concurrency: int) -> dict:
        with peer.running(
            self.work / f"{name}-peer",
            ironic_url=self.proxy.url,
            admin_database_url=self.admin_url,
        ) as service:
            figures = self.run_batch(service.url, nodes, concurrency, service.pids)
        return self.record(name, "ironic-inspector", figures, workers=1)

    def floor(self, name: str, nodes: list[Node], concurrency: int) -> dict:
        self.proxy.ledger.reset()
        self.proxy.ledger.names = {n.name: n.uuid for n in nodes}
        cpu_before = cpu_seconds(self.ironic.pids())
        seconds, each = floor.batch(self.proxy.url, nodes, concurrency, self.args.boot_delay)
        cpu_after = cpu_seconds(self.ironic.pids())
        calls = summary(self.proxy.ledger.reset(), {n.uuid for n in nodes}, {})
        ironic_cpu = sum(cpu_after.get(p, 0.0) - c for p, c in cpu_before.items())
        figures = {
            "batch": len(nodes),
            "concurrency": concurrency,
            "boot_delay": self.args.boot_delay,
            "batch_seconds": seconds,
            "throughput": len(nodes) / seconds,
            "finished": len(nodes),
            "errors": 0,
            "unfinished": 0,
            "introspection_seconds": percentiles(each),
            "ironic_cpu_ms_per_introspection": ironic_cpu * 1000 / len(nodes),
            "histograms": {"introspection_seconds": [round(s, 4) for s in each]},
            **calls,
        }
        return self.record(name, "ironic-floor", figures)

    # -------------------------------------------------------------- scenarios

    def compare(self) -> None:
        """At each of --compare-boot-delays: "compare" at 0 s (ramdisks post at once:
        the floor of the issue, the calls alone), "compare-boot-Ns" otherwise."""
        nodes = spread(self.site, self.args.batch)
        concurrency = self.args.concurrency
        usual = self.args.boot_delay
        for delay in self.args.compare_boot_delays:
            name = "compare" if delay == 0 else f"compare-boot-{delay:g}s"
            self.args.boot_delay = self.ramdisks.boot_delay = delay
            try:
                self.floor(name, nodes, concurrency)
                self.ours(name, nodes, concurrency, workers=1)
                if not self.args.no_peer:
                    self.peer(name, nodes, concurrency)
            finally:
                self.args.boot_delay = self.ramdisks.boot_delay = usual

    def single(self) -> None:
        nodes = spread(self.site, 1)
        self.ours("single", nodes, 1, workers=1)
        if not self.args.no_peer:
            self.peer("single", nodes, 1)

    def batches(self) -> None:
        for size in self.args.batches:
            if size > len(self.site):
                continue
            nodes = spread(self.site, size)
            name = f"batch-{size}"
            for workers in self.args.workers:
                self.ours(name, nodes, size, workers=workers)
            if not self.args.no_peer:
                self.peer(name, nodes, size)

    def kill(self) -> None:
        size = max(s for s in self.args.batches if s <= len(self.site))
        nodes = spread(self.site, size)
        self.ours(f"kill-{size}", nodes, size, workers=2, kill=True)

    def engine(self) -> None:
        """Ours on the fake Ironic, beside the ceiling: one lock, one compare-and-swap and
        one put+get+ack per transition, measured now on the same services."""
        nodes = spread(self.site, self.args.engine_batch)
        with fresh_database(self.admin_url) as database_url:
            parts = {
                "lock_ms": worker_bench.part_lock(self.redis_url, PARTS),
                "cas_ms": worker_bench.part_cas(database_url, PARTS),
                "queue_ms": worker_bench.part_queue(self.queue_url, PARTS),
            }
        sum_ms = sum(parts.values())
        ceiling = 1000 / (TRANSITIONS * sum_ms)
        real = self.proxy
        self.proxy = Proxy(FakeIronic(self.ironic.url, [n.uuid for n in nodes]), self._on_power)
        self.proxy.start()
        try:
            for workers in self.args.workers:
                entry = self.ours("engine", nodes, len(nodes), workers=workers)
                entry.update(
                    target="engine", parts=parts, sum_of_parts_ms=sum_ms, ceiling_per_second=ceiling
                )
        finally:
            self.proxy.stop()
            self.proxy = real


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
    parser.add_argument("--engine-batch", type=int, default=200, help="nodes, engine alone")
    parser.add_argument("--workers", type=ints, default=[1, 2], help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="threads per worker process")
    parser.add_argument("--queue", choices=("rabbitmq", "redis"), default="rabbitmq")
    parser.add_argument(
        "--boot-delay",
        type=float,
        default=1.0,
        help="seconds from power-on to the ramdisk's post (the floor waits as long), "
        "except in the compare scenario",
    )
    parser.add_argument("--deadline-per-node", type=float, default=10.0, help="seconds")
    parser.add_argument("--no-peer", action="store_true", help="skip ironic-inspector")
    parser.add_argument(
        "--ironic-dir", default=str(ROOT / ".services" / "fleet-ironic"), help="kept between runs"
    )
    parser.add_argument("--ironic-port", type=int, default=6395)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "fleet.json"))
    parser.add_argument("--doc", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--images", default=str(ROOT / "docs" / "images"))
    parser.add_argument("--no-doc", action="store_true", help="do not touch docs/")
    parser.add_argument(
        "--merge",
        metavar="RESULTS",
        help="keep the scenarios of this earlier results file that this run does not "
        "run again (the doc then says both commands)",
    )
    args = parser.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = set(args.scenarios) - set(ALL)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args


def merge(results: dict, earlier: dict, ran: list[str]) -> None:
    """Add to `results` the scenarios of `earlier` of the kinds this run did not run."""
    kinds = {"batches": "batch"}
    again = {kinds.get(name, name) for name in ran}
    kept = [s for s in earlier["scenarios"] if s["name"].split("-")[0] not in again]
    results["scenarios"] = kept + results["scenarios"]
    results["command"] = f"{earlier.get('command')}\n{results['command']}"
    results["machine"]["earlier_run"] = earlier.get("machine", {}).get("when")


def _leave(signum: int, _frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # the ExitStack stops what we started


def main(argv: list[str] | None = None) -> dict:
    args = parse(argv)
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
        merge(results, json.loads(pathlib.Path(args.merge).read_text()), args.scenarios)
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
