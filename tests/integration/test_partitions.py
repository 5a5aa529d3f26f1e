"""Partitions: a backend (database, DLM, queue) cut away from the worker processes.

Every worker exits non-zero within its retry budget (max_retries x retry_interval) plus
one queue get timeout, with a message naming the backend; once the backend is back,
restarted workers finish the introspection that was in flight: nothing is lost.
"""

import contextlib
import time
import urllib.parse

import pytest

from tests.conftest import delete_queues
from tests.integration.cluster import (
    Deployment,
    ipa_payload,
    macs,
    post_continue,
    scratch_database,
    start,
    wait_for,
    wait_state,
)
from tests.integration.proxy import TcpProxy

pytestmark = pytest.mark.integration

RETRIES = 3
INTERVAL = 0.5
GET_TIMEOUT = 0.5
BUDGET = RETRIES * INTERVAL + GET_TIMEOUT
#: What a process needs after giving up to close its connections and exit.
TEARDOWN = 4.0
WORKERS = 3


def through(url: str, proxy: TcpProxy) -> str:
    """url with its host and port replaced by the proxy's."""
    parts = urllib.parse.urlsplit(url)
    credentials = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{credentials}127.0.0.1:{proxy.port}"))


def target(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 0


@pytest.mark.parametrize(
    ("backend", "service"), [("database", "database"), ("dlm", "DLM"), ("queue", "queue")]
)
def test_cut_backend_stops_every_worker_and_nothing_is_lost(
    tmp_path,
    postgresql_admin,
    rabbitmq_server,
    redis_server,
    ironic_url,
    ironic_api,
    backend,
    service,
):
    urls = {
        "database": None,  # filled from the scratch database below
        "dlm": redis_server,
        "queue": rabbitmq_server,
    }
    with scratch_database(postgresql_admin) as database_url:
        urls["database"] = database_url
        with TcpProxy(*target(urls[backend])) as proxy:
            proxied = {**urls, backend: through(urls[backend], proxy)}
            policy = {"max_retries": RETRIES, "retry_interval": INTERVAL}
            queue_name = f"test-partition-{backend}-{time.monotonic_ns()}"
            cluster = Deployment(
                tmp_path,
                database_url=proxied["database"],
                queue_url=proxied["queue"],
                queue_name=queue_name,
                redis_url=proxied["dlm"],
                ironic_url=ironic_url,
                options={
                    "database": policy,
                    "coordination": policy,
                    "queue": policy,
                    "worker": {"get_timeout": GET_TIMEOUT},
                },
            )
            with cluster, contextlib.ExitStack() as cleanup:
                cleanup.callback(delete_queues, rabbitmq_server, queue_name)
                cluster.start(apis=1, workers=WORKERS)
                # A worker still starting when the backend goes exits at start-up, not
                # after its retry budget: cut only once every one of them runs.
                cluster.wait_workers()
                node = ironic_api.enroll()["uuid"]
                start(cluster, node)

                proxy.cut()
                cut_at = time.monotonic()
                for worker in cluster.workers:
                    status = worker.popen.wait(timeout=BUDGET + TEARDOWN + 30)
                    assert status != 0, worker.log_text()
                    assert f"gave up on {service}" in worker.log_text(), worker.log_text()
                elapsed = time.monotonic() - cut_at
                assert elapsed < BUDGET + TEARDOWN + INTERVAL, (elapsed, cluster.logs())

                proxy.restore()
                restarted = [cluster.start_worker() for _ in range(WORKERS)]
                payload = ipa_payload(macs(ironic_api, node))
                answer = wait_for(
                    lambda: (r := post_continue(cluster, payload)).status_code == 200 and r,
                    30,
                    message="the API accepting ramdisk data again",
                )
                assert answer.json() == {"uuid": node}
                final = wait_state(cluster, node, "finished")
                assert final["error"] is None
                assert all(worker.alive() for worker in restarted), cluster.logs()
