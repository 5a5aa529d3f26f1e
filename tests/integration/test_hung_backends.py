"""A backend that stops answering (its packets dropped: connections hang instead of being
refused) while ramdisks post their data: every post is answered within 10 s (503 with
Retry-After while the database is out of reach), every introspection finishes once the
backend answers again, and no thread of the API or the worker is left stuck.

The backend (the database, or the Redis DLM) is reached through a TCP proxy of the
test's own, and the packets to and from the proxy's port are dropped with an nftables
table of the test's own (tests/integration/packet_drop.py): the shared services are
never touched.
"""

import contextlib
import dataclasses
import threading
import time

import pytest
import requests

from tests.conftest import delete_queues, service_unavailable
from tests.integration import packet_drop
from tests.integration.cluster import (
    Deployment,
    ipa_payload,
    macs,
    scratch_database,
    start,
    wait_for,
    wait_state,
)
from tests.integration.proxy import TcpProxy
from tests.integration.test_partitions import target, through

pytestmark = pytest.mark.integration

#: Seconds the backend's packets are dropped.
DROP = 30.0
#: Seconds within which every answer must come (ironic-python-agent waits 30).
ANSWER_BUDGET = 10.0
#: What the test's ramdisks wait for an answer before they count it as none.
CLIENT_TIMEOUT = 30.0
NODES = 3
#: Retries that outlast the drop: a worker process gives up on a backend only after
#: max_retries x retry_interval (systemd would restart it; here it need not).
OUTLAST = {"max_retries": 60, "retry_interval": 1.0}


@dataclasses.dataclass
class Attempt:
    started: float
    seconds: float
    status: int | None  # None: no answer within CLIENT_TIMEOUT
    retry_after: str | None = None
    body: dict | None = None


class Ramdisk(threading.Thread):
    """Posts a node's data until answered 200 (ironic-python-agent retries a 5xx, not a
    time-out): after a 503 it waits what Retry-After says; gives up at `until`."""

    def __init__(self, url: str, payload: dict, until: float) -> None:
        super().__init__(daemon=True)
        self.url, self.payload, self.until = url, payload, until
        self.attempts: list[Attempt] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and time.monotonic() < self.until:
            attempt = self._post()
            self.attempts.append(attempt)
            if attempt.status == 200:
                return
            self.stop.wait(float(attempt.retry_after or 1))

    def _post(self) -> Attempt:
        started = time.monotonic()
        try:
            answer = requests.post(
                f"{self.url}/v1/continue", json=self.payload, timeout=CLIENT_TIMEOUT
            )
        except requests.RequestException:
            return Attempt(started, time.monotonic() - started, None)
        body = answer.json() if answer.content else None
        return Attempt(
            started,
            time.monotonic() - started,
            answer.status_code,
            answer.headers.get("Retry-After"),
            body,
        )


@pytest.fixture
def nftables():
    problem = packet_drop.usable()
    if problem:
        service_unavailable(problem)


@contextlib.contextmanager
def deployment_through_proxy(
    tmp_path, backend, postgresql_admin, rabbitmq_server, redis_server, ironic_url
):
    """A started Deployment (one API, one worker) whose `backend` ("database" or "dlm")
    is reached through a proxy; yields both."""
    with scratch_database(postgresql_admin) as database_url:
        urls = {"database": database_url, "dlm": redis_server}
        with TcpProxy(*target(urls[backend])) as proxy:
            proxied = {**urls, backend: through(urls[backend], proxy)}
            queue_name = f"test-hung-{backend}-{time.monotonic_ns()}"
            cluster = Deployment(
                tmp_path,
                database_url=proxied["database"],
                queue_url=rabbitmq_server,
                queue_name=queue_name,
                redis_url=proxied["dlm"],
                ironic_url=ironic_url,
                options={"database": OUTLAST, "coordination": OUTLAST, "worker": {"pool_size": 2}},
            )
            with cluster, contextlib.ExitStack() as cleanup:
                cleanup.callback(delete_queues, rabbitmq_server, queue_name)
                cluster.start(apis=1, workers=1)
                cluster.wait_workers()
                yield cluster, proxy


@pytest.mark.parametrize("backend", ["database", "dlm"])
def test_posts_are_answered_in_time_while_a_backend_drops_packets(
    tmp_path,
    nftables,
    postgresql_admin,
    rabbitmq_server,
    redis_server,
    ironic_url,
    ironic_api,
    backend,
):
    with deployment_through_proxy(
        tmp_path, backend, postgresql_admin, rabbitmq_server, redis_server, ironic_url
    ) as (cluster, proxy):
        nodes = [ironic_api.enroll()["uuid"] for _ in range(NODES)]
        for node in nodes:
            start(cluster, node)
        with packet_drop.dropped(proxy.port):
            began = time.monotonic()
            ramdisks = [
                Ramdisk(cluster.url, ipa_payload(macs(ironic_api, node)), began + DROP + 30)
                for node in nodes
            ]
            for ramdisk in ramdisks:
                ramdisk.start()
            wait_for(
                lambda: time.monotonic() - began >= DROP,
                DROP + 5,
                message="the end of the drop",
            )
        ended = time.monotonic()
        for ramdisk in ramdisks:
            ramdisk.join(timeout=60)
            assert not ramdisk.is_alive(), ramdisk.attempts
        attempts = [a for r in ramdisks for a in r.attempts]
        print(*(f"+{a.started - began:.1f}s {a.status} in {a.seconds:.2f}s" for a in attempts))
        assert all(a.status is not None for a in attempts), (attempts, cluster.logs())
        slow = [a for a in attempts if a.seconds >= ANSWER_BUDGET]
        assert not slow, (slow, cluster.logs())
        assert all(r.attempts[-1].status == 200 for r in ramdisks), attempts
        refused = [a for a in attempts if a.status != 200]
        for attempt in refused:
            assert attempt.status == 503, attempt
            assert attempt.retry_after is not None, attempt
            assert attempt.body["error"]["message"], attempt
        if backend == "database":
            # The API reads the database for every post: the drop reached them.
            during = [a for a in attempts if a.started + a.seconds < ended]
            assert during and all(a.status == 503 for a in during), attempts
        for node in nodes:
            assert wait_state(cluster, node, "finished", timeout=60)["error"] is None
        _nothing_stuck(cluster)


def _nothing_stuck(cluster: Deployment) -> None:
    """A fresh request is answered at once, and each process stops on SIGTERM as a
    process whose threads all returned does (a thread stuck in a call would hold it)."""
    asked = time.monotonic()
    answer = requests.get(f"{cluster.url}/v1/introspection", timeout=ANSWER_BUDGET)
    assert answer.status_code == 200, answer.text
    assert time.monotonic() - asked < ANSWER_BUDGET / 2
    for process in cluster.processes:
        status = process.stop(timeout=ANSWER_BUDGET)
        assert status == 0, (process.name, status, process.log_text()[-5000:])
