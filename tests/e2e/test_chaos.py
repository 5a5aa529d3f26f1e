"""50 introspections on the local cluster while its processes are killed at random.

The cluster of scripts/cluster.py (three `inspector api` behind HAProxy, three inspector
hosts in network namespaces, each with dnsmasq and a worker whose nftables firewall acts
in its namespace; PostgreSQL, RabbitMQ, Redis and the standalone Ironic). 50
fake-hardware nodes are introspected through HAProxy with real ramdisk payloads, posted
once each node waits, while a chaos thread kill -9s a random API or worker process every
few seconds (the firewall leader first and often) and starts it again. Every node must
end `finished`: a worker killed mid-processing leaves its `continue` to another worker,
which processes the data again, and one killed after processing, before `finish`,
leaves that `finish` to be applied (no deja vu); none may stay behind; and at every
sample (every 100 ms) at most one host's PXE service is open.
"""

import random
import threading
import time

import pytest
import requests

from tests.e2e import conftest
from tests.e2e.conftest import Client, Driver, enrolled, payloads, running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.alone]

NODES = 50
#: Seconds the introspections get, chaos included, once the cluster is up.
DEADLINE = 180.0
#: Seconds between two kills (drawn uniformly).
KILL_INTERVAL = (2.0, 4.0)
#: Seconds between two samples of the hosts' firewalls.
SAMPLE_INTERVAL = 0.1
VICTIMS = ("api-1", "api-2", "api-3", "worker-1", "worker-2", "worker-3")
OPTIONS = {"worker": {"pool_size": 4}}


class FirewallWatch:
    """Samples every host's PXE firewall (nft, in its namespace) in a thread."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.samples = 0
        self.opened = 0  # samples with one host open
        self.violations: list[tuple[float, dict[int, str]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="firewall-watch", daemon=True)

    def _run(self) -> None:
        # One sample every SAMPLE_INTERVAL, whatever a sample takes (three nft listings).
        next_at = time.monotonic()
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += SAMPLE_INTERVAL
            hosts = self.cluster.pxe()
            self.samples += 1
            # Unfiltered (no table) would let dnsmasq answer anyone: it counts as open.
            opened = [index for index, state in hosts.items() if state != "closed"]
            self.opened += len(opened) == 1
            if len(opened) > 1 or "unfiltered" in hosts.values():
                self.violations.append((time.time(), hosts))

    def __enter__(self) -> "FirewallWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(30)


class Chaos(conftest.Chaos):
    """APIs and workers, the firewall leader first and often."""

    def __init__(self, cluster, seed: int) -> None:
        super().__init__(cluster, seed, VICTIMS, KILL_INTERVAL)
        self.leader_kills = 0

    def _victim(self) -> str:
        """APIs and workers in turns (a short run still kills both kinds), a random one of
        the kind; the first kill, and half the workers' kills, go to the firewall leader
        (the host whose PXE is open), the invariant's hardest case."""
        kind = "api" if len(self.kills) % 2 else "worker"
        name = self.random.choice([victim for victim in VICTIMS if victim.startswith(kind)])
        if not self.leader_kills or (kind == "worker" and self.random.random() < 0.5):
            leaders = [index for index, state in self.cluster.pxe().items() if state == "open"]
            if leaders:
                self.leader_kills += 1
                return f"worker-{leaders[0]}"
        return name


def test_chaos_50_introspections(tmp_path, services, ironic_api):
    seed = random.randrange(1 << 32)
    print(f"chaos seed {seed}")
    started = time.monotonic()
    with (
        enrolled(ironic_api, NODES) as enrolling,
        running_cluster(tmp_path / "cluster", options=OPTIONS) as cluster,
    ):
        print(f"cluster up in {time.monotonic() - started:.1f} s")
        nodes = enrolling.result()
        data = payloads(ironic_api, nodes)
        client = Client(cluster.url)
        driver = Driver(client, data)
        begun, begun_at = time.monotonic(), time.time()
        deadline = begun + DEADLINE
        try:
            with FirewallWatch(cluster) as watch, Chaos(cluster, seed) as chaos:
                driver.start_all(nodes, deadline)
                final = driver.run(deadline)
        finally:
            driver.close()
        took = time.monotonic() - begun
        kills = [(round(at - begun_at, 1), name) for at, name in chaos.kills]
        print(f"{NODES} introspections in {took:.1f} s; kills (s, process): {kills}")
        print(f"firewall leader kills: {chaos.leader_kills}; samples: {watch.samples}")
        print(f"requests that did not get through (retried): {len(client.failures)}")
        assert chaos.error is None, f"the chaos thread failed: {chaos.error!r}"

        outcomes = {node: final[node] for node in nodes}
        unfinished = {
            node: (status["state"], status["error"])
            for node, status in outcomes.items()
            if status["state"] != "finished"
        }
        assert not unfinished, unfinished

        # The chaos happened, to both kinds of process, and the watch saw the firewall.
        assert len(chaos.kills) >= 0.5 * took / KILL_INTERVAL[1], chaos.kills
        assert {name.split("-")[0] for _, name in chaos.kills} == {"api", "worker"}
        assert chaos.leader_kills >= 1, "the firewall leader was never killed"
        assert watch.samples >= took / (3 * SAMPLE_INTERVAL), watch.samples
        assert watch.opened > 0, "no host's PXE service was ever seen open"
        assert watch.violations == [], watch.violations[:10]

        # What each stored, through the proxy, and what Ironic got.
        for node in nodes:
            answer = requests.get(f"{cluster.url}/v1/introspection/{node}/data", timeout=10)
            assert answer.status_code == 200, answer.text
            interfaces = answer.json()["inventory"]["interfaces"]
            assert interfaces == data[node]["inventory"]["interfaces"]
        sample = ironic_api.get_node(nodes[0])
        inventory = data[nodes[0]]["inventory"]
        assert sample["properties"]["memory_mb"] == str(inventory["memory"]["physical_mb"])
