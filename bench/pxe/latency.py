"""Latency of the PXE filters, side by side on the same Ironic: from a node's `inspect`
(PUT .../states/provision) to its MAC allowed in each filter's hostsdir, and from the
ramdisk's post to /v1/continue_inspection (which takes it back to `manageable`) to its
MAC denied again.

The nodes start one every `spacing` seconds, so that with a periodic filter they meet
every phase of its period; a watcher thread reads the hostsdir entries still awaited
every POLL seconds (the figures' resolution).
"""

import statistics
import threading
import time
from collections.abc import Sequence

from bench.pxe import filters as pxe_filters
from bench.pxe.ironic_site import Node, PxeIronic

#: Seconds between two reads of the hostsdir entries awaited.
POLL = 0.02
#: Seconds a change may take beyond the longest period before it counts as missed.
GRACE = 30.0


class Watcher:
    """Awaited (filter, MAC, entry) triples, each with the time (time.time(), the clock
    Ironic's timestamps use) its change was asked; the time each was seen, read every
    POLL seconds on a thread of its own."""

    def __init__(self, watched: Sequence[pxe_filters.Filter]) -> None:
        self.filters = {f.name: f for f in watched}
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, str], float] = {}
        self.asked: dict[tuple[str, str], float] = {}  # (MAC, entry) -> when asked
        self.seen: dict[tuple[str, str, str], float] = {}  # (filter, MAC, entry) -> when
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostsdir-watcher", daemon=True)
        self._thread.start()

    def expect(self, mac: str, want: str) -> None:
        with self._lock:
            asked = self.asked[(mac, want)] = time.time()
            for name in self.filters:
                self._pending[(name, mac, want)] = asked

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            with self._lock:
                pending = list(self._pending)
            for name, mac, want in pending:
                if pxe_filters.entry(self.filters[name].hostsdir, mac) == want:
                    now = time.time()
                    with self._lock:
                        self._pending.pop((name, mac, want), None)
                        self.seen[(name, mac, want)] = now

    def waiting(self) -> int:
        with self._lock:
            return len(self._pending)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def summary(values: list[float], expected: int) -> dict:
    return {
        "median": statistics.median(values) if values else None,
        "max": max(values) if values else None,
        "min": min(values) if values else None,
        "count": len(values),
        "missed": expected - len(values),
        "samples": [round(v, 3) for v in values],
    }


def measure(
    ironic: PxeIronic,
    nodes: Sequence[Node],
    watched: Sequence[pxe_filters.Filter],
    *,
    spacing: float,
    longest_period: float,
) -> dict:
    """{filter name: {entry: summary}} over `nodes`, for "allow" and "deny" (from the
    request) and "allow_after_ironic", "deny_after_ironic" (from Ironic's own record of
    the change: the node's inspection_started_at, its provision_updated_at once
    `manageable`); and under "ironic" the time Ironic itself took to make each change."""
    timeout = longest_period + GRACE
    for f in watched:
        pxe_filters.wait_for(
            lambda f=f: (
                f.ready() and all(pxe_filters.entry(f.hostsdir, n.mac) == "deny" for n in nodes)
            ),
            timeout,
            f"{f.name} denying the {len(nodes)} MACs",
        )
    watcher = Watcher(watched)
    changed: dict[tuple[str, str], float] = {}  # (MAC, entry) -> Ironic's time of it
    try:
        _paced(
            nodes,
            spacing,
            lambda n: (watcher.expect(n.mac, "allow"), ironic.provision(n.uuid, "inspect")),
        )
        pxe_filters.wait_for(lambda: watcher.waiting() == 0, timeout, "every MAC allowed")
        for node in nodes:
            ironic.wait_state(node.uuid, {"inspect wait"})
            changed[(node.mac, "allow")] = ironic.changed_at(node.uuid, "inspection_started_at")
        _paced(
            nodes, spacing, lambda n: (watcher.expect(n.mac, "deny"), ironic.continue_inspection(n))
        )
        pxe_filters.wait_for(lambda: watcher.waiting() == 0, timeout, "every MAC denied")
        for node in nodes:
            ironic.wait_state(node.uuid, {"manageable"})
            changed[(node.mac, "deny")] = ironic.changed_at(node.uuid, "provision_updated_at")
    except TimeoutError:
        pass  # what was not seen counts as missed
    finally:
        watcher.stop()
    for node in nodes:
        ironic.reset(node.uuid)
    result: dict = {}
    for f in watched:
        figures = result[f.name] = {}
        for want in ("allow", "deny"):
            seen = {
                n.mac: watcher.seen[(f.name, n.mac, want)]
                for n in nodes
                if (f.name, n.mac, want) in watcher.seen
            }
            figures[want] = summary([seen[m] - watcher.asked[(m, want)] for m in seen], len(nodes))
            figures[f"{want}_after_ironic"] = summary(
                [seen[m] - changed[(m, want)] for m in seen if (m, want) in changed], len(nodes)
            )
    result["ironic"] = {
        want: summary(
            [
                changed[(n.mac, want)] - watcher.asked[(n.mac, want)]
                for n in nodes
                if (n.mac, want) in changed
            ],
            len(nodes),
        )
        for want in ("allow", "deny")
    }
    return result


def _paced(nodes: Sequence[Node], spacing: float, action) -> None:
    """action(node) for each node, one every `spacing` seconds."""
    started = time.monotonic()
    for index, node in enumerate(nodes):
        delay = started + index * spacing - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing the starts, not waiting for a result
        action(node)
