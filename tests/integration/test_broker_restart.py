"""The queue's broker restarted under load from an `inspector api` process: once it is
back, no request waits for it (each connection the restart dropped is replaced at once),
and every introspection under way finishes.

The broker is a private one (broker_lab: a RabbitMQ node or a Redis server of the test's
own), stopped and started by scripts/services as an operator's restart would.
"""

import concurrent.futures
import dataclasses
import threading
import time
from collections.abc import Callable

import pytest
import requests

from tests.integration.broker_lab import private_broker
from tests.integration.cluster import (
    ipa_payload,
    macs,
    post_continue,
    running_deployment,
    start,
    wait_state,
)

pytestmark = pytest.mark.integration

#: An answer slower than this, asked once the broker is back, is a stall.
STALL = 1.0
#: Every answer comes within this, even while the broker is down.
ANSWER_BOUND = 10.0
#: Request threads of the API: few, so that the warm-up gives each a broker connection.
API_THREADS = 4
#: Clients scraping /metrics (a queue count per scrape) all along.
SCRAPERS = 2
#: What the API logs when it replaces a connection the broker dropped.
RECONNECTED = "reconnecting at once"


@dataclasses.dataclass(frozen=True)
class Sample:
    what: str
    started: float
    seconds: float
    status: int


class Timer:
    """Every request's start and duration (from several threads)."""

    def __init__(self) -> None:
        self.samples: list[Sample] = []
        self._guard = threading.Lock()

    def __call__(self, what: str, call: Callable[[], requests.Response]) -> requests.Response:
        started = time.monotonic()
        answer = call()
        with self._guard:
            seconds = time.monotonic() - started
            self.samples.append(Sample(what, started, seconds, answer.status_code))
        return answer

    def since(self, moment: float) -> list[Sample]:
        with self._guard:
            return [sample for sample in self.samples if sample.started >= moment]


def scrape(url: str) -> requests.Response:
    return requests.get(f"{url}/metrics", timeout=ANSWER_BOUND + 5)


def scrape_until(stop: threading.Event, url: str, timer: Timer) -> None:
    while not stop.is_set():
        timer("metrics", lambda: scrape(url))


def burst(url: str, timer: Timer, count: int) -> None:
    """count scrapes at once: each request thread of the API takes some."""
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        for answer in pool.map(lambda _: timer("metrics", lambda: scrape(url)), range(count)):
            assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("service", ["rabbitmq", "redis"])
def test_a_broker_restart_stalls_no_request(
    tmp_path, service, postgresql_admin, redis_server, ironic_url, ironic_api
):
    timer = Timer()
    stop = threading.Event()
    with (
        private_broker(service, tmp_path / "broker") as broker,
        running_deployment(
            tmp_path,
            postgresql_admin,
            queue_url=broker.url,
            redis_url=redis_server,
            ironic_url=ironic_url,
            options={"api": {"threads": API_THREADS}},
        ) as cluster,
    ):
        cluster.wait_workers()
        nodes = [ironic_api.enroll()["uuid"] for _ in range(4)]
        waiting, later = nodes[:2], nodes[2:]
        for node in waiting:
            start(cluster, node)
        burst(cluster.url, timer, 4 * API_THREADS)
        scrapers = [
            threading.Thread(target=scrape_until, args=(stop, cluster.url, timer), daemon=True)
            for _ in range(SCRAPERS)
        ]
        for scraper in scrapers:
            scraper.start()
        try:
            broker.stop()
            broker.start()
            back = time.monotonic()
            for node in later:
                url = f"{cluster.url}/v1/introspection/{node}"
                assert timer("introspect", lambda u=url: requests.post(u, timeout=30)).ok
            for node in waiting:
                payload = ipa_payload(macs(ironic_api, node))
                assert timer("continue", lambda p=payload: post_continue(cluster, p)).ok
            burst(cluster.url, timer, 4 * API_THREADS)
        finally:
            stop.set()
            for scraper in scrapers:
                scraper.join(ANSWER_BOUND + 5)
        for node in later:
            wait_state(cluster, node, "waiting")
            post_continue(cluster, ipa_payload(macs(ironic_api, node))).raise_for_status()
        for node in nodes:
            assert wait_state(cluster, node, "finished")["error"] is None
        api_log = cluster.apis[0].log_text()
        cluster.check_alive()

    after = timer.since(back)
    print(
        f"{service}: {len(after)} answers once back, slowest {max(s.seconds for s in after):.3f} s;"
        f" slowest of all {max(s.seconds for s in timer.samples):.3f} s"
    )
    assert len(after) > 4 * API_THREADS
    slow = [sample for sample in after if sample.seconds > STALL]
    assert not slow, f"answers slower than {STALL} s once {service} was back: {slow}"
    assert all(sample.status < 300 for sample in after), after
    assert max(sample.seconds for sample in timer.samples) < ANSWER_BOUND, timer.samples
    if service == "rabbitmq":
        # The stale connections were there, and found before use (redis-py replaces its
        # own silently).
        assert RECONNECTED in api_log, api_log
