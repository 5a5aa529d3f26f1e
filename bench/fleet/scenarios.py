"""The fleet benchmark's scenarios: the fleet's Ironic, the counting proxy in front of
it and the simulated ramdisks, and each scenario run against the floor, our service and
ironic-inspector 12.5.0; every run's figures recorded as one entry of the results.
"""

import argparse
import contextlib
import pathlib
import sys
import tempfile
from collections.abc import Iterator

from bench import worker as worker_bench
from bench.fleet import cluster, floor, ours, peer
from bench.fleet.batch import Batch, cpu_seconds, percentiles
from bench.fleet.fake_ironic import FakeIronic
from bench.fleet.ironic import FleetIronic, Node
from bench.fleet.proxy import Proxy, summary
from bench.fleet.ramdisk import Ramdisks, load_template
from bench.worker import env, fresh_database

ALL = ("compare", "single", "batches", "kill", "cluster", "engine")
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
        # Ironic answers more slowly the more nodes it holds (its power-state sync and
        # its queries): the figures are for every node it holds, not only the site's.
        self.site, self.enrolled = self.ironic.site(args.site)
        if self.enrolled > len(self.site):
            print(
                f"the fleet's Ironic ({args.ironic_dir}) holds {self.enrolled} nodes, more "
                f"than the site of {len(self.site)}: the figures are for {self.enrolled}",
                flush=True,
            )
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

    @contextlib.contextmanager
    def boot_delay(self, seconds: float) -> Iterator[None]:
        """The ramdisks' (and the floor's) boot delay for the block, then the usual one."""
        usual = self.args.boot_delay
        self.args.boot_delay = self.ramdisks.boot_delay = seconds
        try:
            yield
        finally:
            self.args.boot_delay = self.ramdisks.boot_delay = usual

    def record(self, name: str, target: str, figures: dict, **extra: object) -> dict:
        entry = {"name": name, "target": target, "enrolled": self.enrolled, **extra, **figures}
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
        for delay in self.args.compare_boot_delays:
            name = "compare" if delay == 0 else f"compare-boot-{delay:g}s"
            with self.boot_delay(delay):
                self.floor(name, nodes, concurrency)
                self.ours(name, nodes, concurrency, workers=1)
                if not self.args.no_peer:
                    self.peer(name, nodes, concurrency)

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

    def cluster(self) -> None:
        """The largest batch on the local cluster (scripts/cluster: three APIs behind
        HAProxy, three hosts each with a worker and its nftables firewall), then the same
        batch again with the first host's worker killed with kill -9 half-way."""
        size = max(s for s in self.args.batches if s <= len(self.site))
        nodes = spread(self.site, size)
        with cluster.running(
            self.work / "cluster", ironic_url=self.proxy.url, threads=self.args.threads
        ) as deployment:
            for kill in (False, True):
                name = f"cluster-kill-{size}" if kill else f"cluster-{size}"
                figures = self.run_batch(
                    deployment.url,
                    nodes,
                    size,
                    deployment.pids,
                    kill=deployment.kill_worker if kill else None,
                )
                if figures["unfinished"] or figures["errors"]:
                    print(deployment.logs()[-6000:], file=sys.stderr)
                self.record(
                    name,
                    "inspector",
                    figures,
                    workers=cluster.HOSTS,
                    hosts=cluster.HOSTS,
                    worker_threads=self.args.threads,
                    killed_worker=kill,
                )

    def engine(self) -> None:
        """Ours on the fake Ironic, beside the ceiling: the parts of an introspection's
        transitions as bench/worker.py counts them, measured now on the same services.
        Ramdisks post after --engine-boot-delay (0 s): a second of simulated boot in a
        batch of a few seconds would be timed as the engine's."""
        nodes = spread(self.site, self.args.engine_batch)
        with fresh_database(self.admin_url) as database_url:
            parts = {
                "lock_ms": worker_bench.part_lock(self.redis_url, PARTS),
                "cas_ms": worker_bench.part_cas(database_url, PARTS),
                "queue_ms": worker_bench.part_queue(self.queue_url, PARTS),
            }
        sum_ms = sum(parts.values())
        ceiling = 1000 / worker_bench.introspection_parts_ms(
            parts["lock_ms"], parts["cas_ms"], parts["queue_ms"]
        )
        real = self.proxy
        self.proxy = Proxy(FakeIronic(self.ironic.url, [n.uuid for n in nodes]), self._on_power)
        self.proxy.start()
        try:
            with self.boot_delay(self.args.engine_boot_delay):
                for workers in self.args.workers:
                    entry = self.ours("engine", nodes, len(nodes), workers=workers)
                    entry.update(
                        target="engine",
                        parts=parts,
                        sum_of_parts_ms=sum_ms,
                        ceiling_per_second=ceiling,
                    )
        finally:
            self.proxy.stop()
            self.proxy = real
