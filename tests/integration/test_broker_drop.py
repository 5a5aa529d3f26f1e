"""The queue's broker hung for 30 s (every packet between Inspector and it dropped, so
connections hang instead of being refused) while ramdisks post their data: every post
is answered within 10 s, 503 while the broker cannot take the request (the ramdisk posts
again) or 200 once it is queued, and every introspection finishes after the drop.

The packets are dropped on the port of a TcpProxy of the test's own, in front of the
shared RabbitMQ: the broker itself and every other test's connections are untouched.
"""

import contextlib
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
    wait_state,
)
from tests.integration.proxy import TcpProxy
from tests.integration.test_partitions import target, through

pytestmark = pytest.mark.integration

#: How long the broker hangs.
DROP = 30.0
#: Every answer comes within this.
ANSWER_BOUND = 10.0
#: What ironic-python-agent waits for an answer (it does not post again after that).
RAMDISK_TIMEOUT = 30.0
#: Seconds a ramdisk waits before it posts again after a 5xx.
RAMDISK_PAUSE = 5.0
NODES = 3


class Ramdisk(threading.Thread):
    """Posts its node's data until it gets 200, each post timed."""

    def __init__(self, url: str, payload: dict, until: float) -> None:
        super().__init__(daemon=True)
        self.url, self.payload, self.until = url, payload, until
        self.answers: list[tuple[float, int]] = []
        #: The Retry-After of each 503.
        self.retry_after: list[str | None] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while time.monotonic() < self.until and not self.stopped.is_set():
            started = time.monotonic()
            try:
                answer = requests.post(
                    f"{self.url}/v1/continue", json=self.payload, timeout=RAMDISK_TIMEOUT
                )
                status = answer.status_code
                if status == 503:
                    self.retry_after.append(answer.headers.get("Retry-After"))
            except requests.RequestException:
                status = 0
            self.answers.append((time.monotonic() - started, status))
            if status == 200:
                return
            self.stopped.wait(RAMDISK_PAUSE)


def test_a_hung_broker_holds_no_post_past_the_bound(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    problem = packet_drop.usable()
    if problem:
        service_unavailable(problem)
    queue_name = f"test-drop-{time.monotonic_ns()}"
    with (
        scratch_database(postgresql_admin) as database_url,
        TcpProxy(*target(rabbitmq_server)) as proxy,
    ):
        cluster = Deployment(
            tmp_path,
            database_url=database_url,
            queue_url=through(rabbitmq_server, proxy),
            queue_name=queue_name,
            redis_url=redis_server,
            ironic_url=ironic_url,
        )
        with cluster, contextlib.ExitStack() as cleanup:
            cleanup.callback(delete_queues, rabbitmq_server, queue_name)
            cluster.start(apis=1, workers=1)
            cluster.wait_workers()
            nodes = [ironic_api.enroll()["uuid"] for _ in range(NODES)]
            for node in nodes:
                start(cluster, node)
            payloads = [ipa_payload(macs(ironic_api, node)) for node in nodes]
            with packet_drop.dropped(proxy.port):
                dropped_until = time.monotonic() + DROP
                ramdisks = [Ramdisk(cluster.url, p, dropped_until + 60) for p in payloads]
                for ramdisk in ramdisks:
                    ramdisk.start()
                # The drop lasts DROP seconds, whatever the ramdisks do meanwhile.
                threading.Event().wait(max(0.0, dropped_until - time.monotonic()))
            for ramdisk in ramdisks:
                ramdisk.join(RAMDISK_PAUSE + ANSWER_BOUND + 30)
            for node in nodes:
                assert wait_state(cluster, node, "finished")["error"] is None
            cluster.check_alive()

    answers = [answer for ramdisk in ramdisks for answer in ramdisk.answers]
    print("(seconds, status) of every post:", answers)
    assert all(ramdisk.answers[-1][1] == 200 for ramdisk in ramdisks), answers
    assert all(status in (200, 503) for _, status in answers), answers
    assert max(seconds for seconds, _ in answers) < ANSWER_BOUND, answers
    # The drop was felt: the first posts could not be queued.
    assert any(status == 503 for _, status in answers), answers
    # Each 503 tells the ramdisk when to post again.
    retry_after = [value for ramdisk in ramdisks for value in ramdisk.retry_after]
    assert retry_after and all(value and value.isdigit() for value in retry_after), retry_after
