"""The cost of one full reconcile of a PXE filter with Ironic, each filter alone on the
machine (the other stopped) at a short period, once its first reconcile has written
every MAC: wall time, CPU seconds of the filter's processes and of Ironic's, and what it
asked of Ironic (ours: REST calls through the counting proxy; ironic-pxe-filter: SQL
statements on Ironic's database).

The window runs from the end of one reconcile to the end of the `count`-th after it, so
each process's CPU over the window, divided by `count`, is what one reconcile costs it
with whatever it spends idle in between (ours: the leader election, the notification
listener).
"""

import statistics
import time
from collections.abc import Callable

from bench.fleet.batch import cpu_seconds
from bench.pxe import filters as pxe_filters
from bench.pxe.ironic_site import PxeIronic, node_mac

#: Seconds beyond `count` periods the window may take.
GRACE = 60.0


def _ironic_cpu(ironic: PxeIronic) -> float:
    return sum(cpu_seconds(ironic.pids()).values())


def _all_written(f: pxe_filters.Filter, nodes: int) -> bool:
    return all(
        pxe_filters.entry(f.hostsdir, node_mac(i)) == "deny" for i in (0, nodes // 2, nodes - 1)
    )


def _stats(values: list[float]) -> dict:
    return {
        "median": statistics.median(values) if values else None,
        "max": max(values) if values else None,
    }


def _window(
    f: pxe_filters.Filter,
    ironic: PxeIronic,
    nodes: int,
    count: int,
    period: float,
    done: Callable[[], list[dict]],
) -> tuple[list[dict], dict]:
    """The `count` reconciles (`done()`: those finished so far) after the first two of
    the started filter `f`, and what the window cost; the filter is stopped after."""
    try:
        pxe_filters.wait_for(
            lambda: f.alive() and _all_written(f, nodes) and len(done()) >= 1,
            period + GRACE,
            f"{f.name}'s first reconcile",
        )
        first = len(done())
        pxe_filters.wait_for(
            lambda: len(done()) > first, period + GRACE, f"{f.name}'s next reconcile"
        )
        start = len(done())
        cpu0, ironic0, t0 = f.cpu(), _ironic_cpu(ironic), time.monotonic()
        pxe_filters.wait_for(
            lambda: len(done()) >= start + count,
            count * period + GRACE,
            f"{count} reconciles of {f.name}",
        )
        cpu1, ironic1, t1 = f.cpu(), _ironic_cpu(ironic), time.monotonic()
        records = done()[start : start + count]
    finally:
        f.stop()
    return records, {
        "filter": f.name,
        "nodes": nodes,
        "period": period,
        "reconciles": count,
        "window_seconds": t1 - t0,
        "wall": _stats([r["wall"] for r in records]),
        "cpu_per_reconcile": (cpu1 - cpu0) / count,
        "ironic_cpu_per_reconcile": (ironic1 - ironic0) / count,
    }


def theirs(f: pxe_filters.Theirs, ironic: PxeIronic, nodes: int, count: int) -> dict:
    period = f.period or 45.0
    f.start()
    syncs, result = _window(f, ironic, nodes, count, period, f.syncs)
    return result | {
        "sync_thread_cpu": _stats([s["cpu"] for s in syncs]),
        "requests_per_reconcile": statistics.median(s["statements"] for s in syncs),
        "requests_kind": "SQL statements on Ironic's database",
        "sql": syncs[-1].get("sql"),
        "macs": syncs[-1]["allowed"] + syncs[-1]["denied"],
    }


def ours(f: pxe_filters.Ours, ironic: PxeIronic, nodes: int, count: int, period: float) -> dict:
    """Ours lists the nodes under inspection (the reconcile: the leader's every period, a
    new leader's before it opens) and every port (the blacklist's listing, on a thread
    of its own) each `period`. The window counts port listings: the cost per full
    reconcile is that of one port listing and the nodes' reconciles beside it. `wall`
    is the nodes' reconcile's, `ports` the port listing's, `full_wall` both one after
    the other (as if one thread ran them)."""
    f.start()

    def done(kind: str) -> list[dict]:
        """The listings of `kind` seen whose last call is RECONCILE_GAP old (so over)."""
        now = time.monotonic()
        groups = pxe_filters.reconciles(f.proxy.ledger.calls(), kind)
        return [g for g in groups if now - (g["at"] + g["wall"]) > pxe_filters.RECONCILE_GAP]

    listings, result = _window(f, ironic, nodes, count, period, lambda: done(pxe_filters.PORTS))
    began, ended = listings[0]["at"], listings[-1]["at"] + listings[-1]["wall"]
    groups = [g for g in done(pxe_filters.NODES) if began <= g["at"] <= ended]
    node_wall = statistics.median(g["wall"] for g in groups)
    return result | {
        "wall": _stats([g["wall"] for g in groups]),
        "ironic_seconds": _stats([g["ironic_seconds"] for g in groups]),
        "reconcile_calls": statistics.median(g["calls"] for g in groups),
        "ports": {
            "listings": len(listings),
            "wall": _stats([g["wall"] for g in listings]),
            "ironic_seconds": _stats([g["ironic_seconds"] for g in listings]),
            "calls": statistics.median(g["calls"] for g in listings),
        },
        "full_wall": _stats([g["wall"] + node_wall for g in listings]),
        "requests_per_reconcile": statistics.median(g["calls"] for g in groups)
        + statistics.median(g["calls"] for g in listings),
        "requests_kind": "REST calls to Ironic (paginated listings)",
        "call_kinds": sorted({k for g in groups + listings for k in g["kinds"]}),
    }
