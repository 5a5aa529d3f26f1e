"""The Ironic floor: the Ironic calls alone of a minimal introspection, for a batch of
nodes at a given concurrency, through the same proxy as the services under test.

Per node, in order: get the node, list its ports, set the boot device to PXE, reboot,
(the same simulated boot delay as the services' ramdisks), one PATCH of the results,
power off. A 409 NodeLocked (a power action still running in
Ironic's conductor) is retried at once after a short pause, as fast as Ironic allows:
this is the floor, the least any introspection service could spend on Ironic.
"""

import concurrent.futures
import threading
import time

import requests

from bench.fleet.ironic import HEADERS, Node

#: Seconds between attempts on 409 NodeLocked, and the attempts allowed.
RETRY_PAUSE = 0.05
ATTEMPTS = 600


def _call(session: requests.Session, method: str, url: str, **kwargs) -> requests.Response:
    for _ in range(ATTEMPTS):
        reply = session.request(method, url, timeout=120, **kwargs)
        if reply.status_code != 409:
            reply.raise_for_status()
            return reply
        time.sleep(RETRY_PAUSE)  # Ironic's node lock is held by a power action
    raise RuntimeError(f"{method} {url}: still locked after {ATTEMPTS} attempts")


def introspect(session: requests.Session, url: str, node: Node, boot_delay: float) -> float:
    """The minimal sequence for one node, with the ramdisk's boot between the reboot and
    the PATCH (as the services wait for it); its seconds."""
    started = time.perf_counter()
    base = f"{url}/v1/nodes/{node.uuid}"
    _call(session, "GET", base)
    _call(session, "GET", f"{url}/v1/ports/detail", params={"node_uuid": node.uuid})
    _call(session, "PUT", f"{base}/management/boot_device", json={"boot_device": "pxe"})
    _call(session, "PUT", f"{base}/states/power", json={"target": "rebooting"})
    time.sleep(boot_delay)  # the simulated server boots its ramdisk
    _call(
        session,
        "PATCH",
        base,
        json=[
            {"op": "add", "path": "/properties/cpus", "value": "2"},
            {"op": "add", "path": "/properties/memory_mb", "value": "24576"},
            {"op": "add", "path": "/properties/local_gb", "value": "100"},
            {"op": "add", "path": "/properties/cpu_arch", "value": "x86_64"},
        ],
    )
    _call(session, "PUT", f"{base}/states/power", json={"target": "power off"})
    return time.perf_counter() - started


def batch(
    url: str, nodes: list[Node], concurrency: int, boot_delay: float = 0.0
) -> tuple[float, list[float]]:
    """(batch seconds, seconds of each node) for the whole batch at this concurrency."""
    local = threading.local()

    def one(node: Node) -> float:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers.update(HEADERS)
        return introspect(local.session, url, node, boot_delay)

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        each = list(pool.map(one, nodes))
    return time.perf_counter() - started, each
