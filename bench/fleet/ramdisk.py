"""Simulated inspection ramdisks: a real ironic-python-agent payload per node, posted to
the service's /v1/continue a boot delay after the node was powered on.

The payload is the one captured from ironic-python-agent on these machines, with its
interfaces' MAC addresses rewritten to the node's ports and its BMC address made the
node's own (so a lookup finds this node and no other). A node powered on twice boots
twice, like a real server. Latencies of every post are kept for the report.
"""

import copy
import heapq
import json
import pathlib
import threading
import time
from collections.abc import Sequence

import requests

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared"
FIXTURE = SHARED / "fixtures" / "ipa" / "ipa-thismachine.json"
#: Seconds a post may take before it counts as failed.
POST_TIMEOUT = 60.0


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
        self._due: list[tuple[float, int, str]] = []
        self._order = 0
        self._cond = threading.Condition()
        self._stopped = False
        self._latencies: list[tuple[float, int]] = []  # (seconds, status)
        self.posted: list[tuple[str, float, float]] = []  # (node, monotonic sent, seconds)
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

    def boot(self, node_uuid: str | None) -> None:
        with self._cond:
            if node_uuid not in self._payloads:
                return
            self._order += 1
            heapq.heappush(self._due, (time.monotonic() + self.boot_delay, self._order, node_uuid))
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

    def _next(self) -> tuple[str, bytes, str] | None:
        with self._cond:
            while not self._stopped:
                if self._due:
                    delay = self._due[0][0] - time.monotonic()
                    if delay <= 0:
                        node = heapq.heappop(self._due)[2]
                        return node, self._payloads[node], self.url or ""
                    self._cond.wait(delay)
                else:
                    self._cond.wait()
            return None

    def _run(self) -> None:
        session = requests.Session()
        headers = {"Content-Type": "application/json"}
        while (item := self._next()) is not None:
            node, body, url = item
            sent = time.monotonic()
            started = time.perf_counter()
            try:
                status = session.post(
                    f"{url}/v1/continue", data=body, headers=headers, timeout=POST_TIMEOUT
                ).status_code
            except requests.RequestException:
                status = 0
            with self._cond:
                seconds = time.perf_counter() - started
                self._latencies.append((seconds, status))
                self.posted.append((node, sent, seconds))
