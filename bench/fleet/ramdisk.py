"""Simulated inspection ramdisks: a real ironic-python-agent payload per node, posted to
the service's /v1/continue a boot delay after the node was powered on.

The payload is the one captured from ironic-python-agent on these machines, with its
interfaces' MAC addresses rewritten to the node's ports and its BMC address made the
node's own (so a lookup finds this node and no other). A node powered on twice boots
twice, like a real server. Latencies of every post are kept for the report.

Each post is sent as ironic-python-agent sends it (`call_inspector`): on a new
connection, and again after a connection error or a 5xx, up to 5 attempts, waiting 5,
5, 6 and 12 s (its exponential wait, 1.5 x 2^n clipped to 5-30 s); a 4xx is final. Until
2026-11-26 a thread's posts shared one keep-alive connection and were never retried: a
post that met HAProxy closing that connection (its 5 s keep-alive timeout) was lost, as
no real ramdisk loses it.
"""

import copy
import heapq
import json
import pathlib
import threading
import time
from collections.abc import Sequence

import requests

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "tests/fixtures/ipa/ipa-thismachine.json"
#: Seconds a post may take before it counts as failed.
POST_TIMEOUT = 60.0
#: ironic-python-agent's retries of a post: attempts, and the wait before each retry.
ATTEMPTS = 5
RETRY_WAITS = (5.0, 5.0, 6.0, 12.0)


def payload(template: dict, macs: Sequence[str], bmc_address: str) -> bytes:
    """The template with one interface per MAC (in order) and this BMC address."""
    data = copy.deepcopy(template)
    interfaces = data["inventory"]["interfaces"]
    rewritten = []
    for index, mac in enumerate(macs):
        interface = copy.deepcopy(interfaces[min(index, len(interfaces) - 1)])
        interface["name"] = interface["name"] if index < len(interfaces) else f"eth{index}"
        interface["mac_address"] = mac
        rewritten.append(interface)
    data["inventory"]["interfaces"] = rewritten
    data["inventory"]["bmc_address"] = bmc_address
    # The MAC it PXE-booted from (BOOTIF), as a real ramdisk reports it.
    data["boot_interface"] = rewritten[0]["mac_address"] if rewritten else None
    return json.dumps(data).encode()


def load_template(path: pathlib.Path = FIXTURE) -> dict:
    return json.loads(path.read_text())


class Ramdisks:
    """Boots registered nodes: boot(uuid) posts its payload after `boot_delay` seconds,
    from a pool of `threads` posting threads, to `url` + /v1/continue."""

    def __init__(self, *, boot_delay: float, threads: int = 16) -> None:
        self.boot_delay = boot_delay
        self.url: str | None = None
        self._payloads: dict[str, bytes] = {}
        #: (due, order, node, attempt, run): run counts register() calls, so that a retry
        #: left from an earlier run is dropped
        self._due: list[tuple[float, int, str, int, int]] = []
        self._run_number = 0
        self._order = 0
        self._cond = threading.Condition()
        self._stopped = False
        self._latencies: list[tuple[float, int]] = []  # (seconds, status) of every attempt
        self.posted: list[tuple[str, float, float]] = []  # (node, monotonic sent, seconds)
        #: (node, attempt, status or 0, what came back) of every attempt that failed
        self.failures: list[tuple[str, int, int, str]] = []
        self._threads = [
            threading.Thread(target=self._run, name=f"ramdisk-{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def register(self, payloads: dict[str, bytes], url: str) -> None:
        """Only these nodes boot a ramdisk from now on, posting to this service."""
        with self._cond:
            self._payloads = dict(payloads)
            self.url = url
            self._latencies = []
            self.posted = []
            self.failures = []
            self._run_number += 1

    def boot(self, node_uuid: str | None) -> None:
        with self._cond:
            if node_uuid not in self._payloads:
                return
            self._schedule(node_uuid, self.boot_delay, attempt=1)

    def _schedule(self, node_uuid: str, delay: float, *, attempt: int) -> None:
        self._order += 1
        due = (time.monotonic() + delay, self._order, node_uuid, attempt, self._run_number)
        heapq.heappush(self._due, due)
        self._cond.notify()

    def latencies(self) -> list[tuple[float, int]]:
        with self._cond:
            return list(self._latencies)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=POST_TIMEOUT)

    def _next(self) -> tuple[str, bytes, str, int] | None:
        with self._cond:
            while not self._stopped:
                if self._due:
                    delay = self._due[0][0] - time.monotonic()
                    if delay <= 0:
                        _due, _order, node, attempt, run = heapq.heappop(self._due)
                        if run != self._run_number:
                            continue
                        return node, self._payloads[node], self.url or "", attempt
                    self._cond.wait(delay)
                else:
                    self._cond.wait()
            return None

    def _run(self) -> None:
        headers = {"Content-Type": "application/json"}
        while (item := self._next()) is not None:
            node, body, url, attempt = item
            sent = time.monotonic()
            started = time.perf_counter()
            try:
                # No session: a new connection each time, as the ramdisk's requests.post.
                reply = requests.post(
                    f"{url}/v1/continue", data=body, headers=headers, timeout=POST_TIMEOUT
                )
                status, detail = reply.status_code, reply.text[:200]
                retriable = status >= 500
            except requests.RequestException as exc:
                status, detail = 0, f"{type(exc).__name__}: {exc}"[:200]
                # As the ramdisk: a connection error (refused, reset, connect timeout),
                # not a read timeout.
                retriable = isinstance(exc, requests.ConnectionError)
            with self._cond:
                seconds = time.perf_counter() - started
                self._latencies.append((seconds, status))
                self.posted.append((node, sent, seconds))
                if not 200 <= status < 300:
                    self.failures.append((node, attempt, status, detail))
                    if retriable and attempt < ATTEMPTS:
                        self._schedule(node, RETRY_WAITS[attempt - 1], attempt=attempt + 1)
