"""The local cluster (scripts/cluster.py) for the end-to-end tests, the chaos that kills
its processes, and a client that goes through its HAProxy the way Ironic and the ramdisk
do: retrying what a killed back end dropped, and telling a retried request that had
already been taken from a refusal.

A missing prerequisite (root, haproxy, nft, dnsmasq, ip, or a service) skips on a laptop
and fails when CI is set.
"""

import concurrent.futures
import contextlib
import os
import pathlib
import random
import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.conftest import IronicAPI, service_unavailable
from tests.integration.cluster import ipa_payload, wait_for
from tests.script_modules import load_script

#: Seconds between two looks at the introspections (a poll inside a deadline).
POLL = 0.3
#: HTTP answers that mean "this attempt did not get through": the proxy's own (no back
#: end, back end died) and the API's rate limit.
RETRYABLE = frozenset({429, 502, 503, 504})
#: States of an introspection that is over.
FINAL = frozenset({"finished", "error"})


def load_cluster_module():
    """scripts/cluster.py as a module."""
    return load_script("cluster")


def require_cluster_prerequisites() -> None:
    if os.geteuid() != 0:
        service_unavailable("the local cluster needs root (network namespaces, nftables)")
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
    for tool, package in (("haproxy", "haproxy"), ("nft", "nftables"), ("ip", "iproute2")):
        if not shutil.which(tool, path=path):
            service_unavailable(f"{tool} is not installed: apt-get install {package}")
    if not shutil.which("dnsmasq", path=path):
        service_unavailable("dnsmasq is not installed: apt-get install dnsmasq-base")


@pytest.fixture
def services(postgresql_admin, redis_server, rabbitmq_server, ironic_url) -> dict[str, str]:
    """The running services the cluster uses (it starts none of them in the tests)."""
    require_cluster_prerequisites()
    return {
        "postgresql": postgresql_admin.url.render_as_string(hide_password=False),
        "redis": redis_server,
        "rabbitmq": rabbitmq_server,
        "ironic": ironic_url,
    }


@contextlib.contextmanager
def running_cluster(directory: pathlib.Path, **up_args: Any) -> Iterator[Any]:
    """A local cluster in directory, up; down afterwards, printing the logs' tails (shown
    by pytest when the test failed)."""
    module = load_cluster_module()
    cluster = module.Cluster(directory)
    # A test killed halfway leaves its cluster: `scripts/cluster --dir DIR down` removes it.
    print(f"cluster directory: {cluster.dir}")
    try:
        cluster.up(0, **up_args)
        yield cluster
    finally:
        for name in module.process_names():
            print(f"----- {name}\n{cluster.log_tail(name, 30)}")
        cluster.down()
        assert not cluster.load(), "scripts/cluster down left state behind"


def enroll(ironic_api: IronicAPI, count: int, threads: int = 10) -> list[str]:
    """count manageable fake-hardware nodes with one PXE port each, enrolled in parallel;
    tracked by ironic_api, so deleted after the test."""

    def one(_: int) -> str:
        client = IronicAPI(ironic_api.url)
        try:
            return client.enroll()["uuid"]
        finally:
            for uuid in client.node_uuids:
                ironic_api.track(uuid)
            client.session.close()

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, range(count)))


def delete(ironic_api: IronicAPI, nodes: list[str], threads: int = 10) -> None:
    """Delete the nodes from Ironic in parallel (the fixture's own clean-up, one by one,
    then finds them gone)."""

    def one(node: str) -> None:
        client = IronicAPI(ironic_api.url)
        try:
            client.node_uuids.append(node)
            client.delete_nodes()
        finally:
            client.session.close()

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, nodes))


@contextlib.contextmanager
def enrolled(ironic_api: IronicAPI, count: int) -> Iterator[concurrent.futures.Future]:
    """Enrolls count nodes in a thread while the block runs (e.g. while the cluster
    starts): a future of their uuids; deleted in parallel after the block."""
    with concurrent.futures.ThreadPoolExecutor(1) as background:
        future = background.submit(enroll, ironic_api, count)
        try:
            yield future
        finally:
            with contextlib.suppress(Exception):
                delete(ironic_api, future.result())


def payloads(ironic_api: IronicAPI, nodes: list[str]) -> dict[str, dict]:
    """Each node's real ramdisk payload, carrying its Ironic ports' MACs."""
    return {
        node: ipa_payload(port["address"] for port in ironic_api.node_ports(node)) for node in nodes
    }


class Client:
    """Requests through the proxy; counts the attempts that did not get through."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url
        self.timeout = timeout
        self.failures: list[tuple[float, str]] = []
        self._local = threading.local()
        self._guard = threading.Lock()

    def attempt(self, method: str, path: str, **kwargs: Any) -> requests.Response | None:
        """One attempt; None when it did not get through (connection error or RETRYABLE)."""
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        try:
            answer = session.request(method, self.url + path, timeout=self.timeout, **kwargs)
        except requests.RequestException as error:
            failure = f"{method} {path}: {type(error).__name__}"
        else:
            if answer.status_code not in RETRYABLE:
                return answer
            failure = f"{method} {path}: HTTP {answer.status_code}"
        with self._guard:
            self.failures.append((time.time(), failure))
        return None

    def until(self, what: str, deadline: float, step) -> Any:
        """step() until it returns something other than None; AssertionError at deadline."""
        while (result := step()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: no success before the deadline")
            time.sleep(0.2)  # between attempts of a retried request, inside a deadline
        return result

    def states(self, deadline: float) -> dict[str, dict]:
        """node uuid -> its status document, from one listing."""

        def step():
            answer = self.attempt("GET", "/v1/introspection?limit=1000")
            if answer is None:
                return None
            assert answer.status_code == 200, answer.text
            return {status["uuid"]: status for status in answer.json()["introspection"]}

        return self.until("listing the introspections", deadline, step)

    def status(self, node: str, deadline: float) -> dict:
        def step():
            answer = self.attempt("GET", f"/v1/introspection/{node}")
            return None if answer is None else answer.json()

        return self.until(f"status of {node}", deadline, step)

    def start(self, node: str, deadline: float) -> None:
        """POST /v1/introspection/<node> until one attempt was taken: a 202, or a 409 on a
        retry whose earlier attempt had started it (the node is past `starting`)."""

        retried = []

        def step():
            answer = self.attempt("POST", f"/v1/introspection/{node}")
            if answer is None:
                retried.append(True)
                return None
            if answer.status_code == 409 and retried:
                state = self.status(node, deadline).get("state")
                assert state in ("starting", "waiting", "processing", *FINAL), state
                return True
            assert answer.status_code == 202, f"start {node}: {answer.text}"
            return True

        self.until(f"starting {node}", deadline, step)

    def post_continue(self, node: str, payload: dict, deadline: float) -> None:
        """The ramdisk's POST /v1/continue, retried as the agent does; a 404 on a retry
        means an earlier attempt was taken (the node is no longer waiting)."""

        retried = []

        def step():
            answer = self.attempt("POST", "/v1/continue", json=payload)
            if answer is None:
                retried.append(True)
                return None
            if answer.status_code == 404 and retried:
                return True if self.status(node, deadline)["state"] != "waiting" else None
            assert answer.status_code == 200, f"continue {node}: {answer.text}"
            assert answer.json() == {"uuid": node}
            return True

        self.until(f"continue of {node}", deadline, step)


class Driver:
    """Starts introspections and plays each node's ramdisk once the node is waiting, in a
    thread pool, until every node is over or the deadline."""

    def __init__(self, client: Client, payloads: dict[str, dict], threads: int = 8) -> None:
        self.client = client
        self.payloads = payloads
        self.pool = concurrent.futures.ThreadPoolExecutor(threads)
        self.posted: set[str] = set()
        self.futures: list[concurrent.futures.Future] = []

    def start_all(self, nodes: list[str], deadline: float) -> None:
        list(self.pool.map(lambda node: self.client.start(node, deadline), nodes))

    def post_waiting(self, states: dict[str, dict], deadline: float, limit: int | None = None):
        """Post the payload of the waiting nodes not posted yet (at most limit of them)."""
        waiting = [n for n in self.payloads if states.get(n, {}).get("state") == "waiting"]
        for node in [n for n in waiting if n not in self.posted][:limit]:
            self.posted.add(node)
            payload = self.payloads[node]
            self.futures.append(
                self.pool.submit(self.client.post_continue, node, payload, deadline)
            )

    def run(self, deadline: float) -> dict[str, dict]:
        """Until every node is over: the final states."""

        def over():
            states = self.client.states(deadline)
            self.post_waiting(states, deadline)
            for future in [f for f in self.futures if f.done()]:
                future.result()  # a failed post fails the test here
            return all(states.get(n, {}).get("state") in FINAL for n in self.payloads) and states

        return wait_for(
            over,
            max(0.0, deadline - time.monotonic()),
            POLL,
            message=lambda: f"every introspection over: {self.summary()}",
        )

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        with contextlib.suppress(AssertionError):
            states = self.client.states(time.monotonic() + 10)
            for node in self.payloads:
                state = states.get(node, {}).get("state", "none")
                counts[state] = counts.get(state, 0) + 1
        return counts

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class Chaos:
    """kill -9 of a process of the cluster every few seconds (drawn uniformly from
    interval), started again at once (the cluster does not restart what dies), in a
    thread; `_victim` chooses which (here: one of victims at random), or None to let a
    turn pass."""

    def __init__(self, cluster, seed: int, victims: tuple[str, ...], interval) -> None:
        self.cluster = cluster
        self.random = random.Random(seed)
        self.victims = victims
        self.interval = interval
        self.kills: list[tuple[float, str]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos", daemon=True)

    def _victim(self) -> str | None:
        return self.random.choice(self.victims)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.random.uniform(*self.interval)):
                name = self._victim()
                if name is None:
                    continue
                self.cluster.kill(name)
                self.kills.append((time.time(), name))
                self.cluster.start(name)
        except BaseException as error:  # reported by the test, not lost in the thread
            self.error = error

    def __enter__(self) -> "Chaos":
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(60)
