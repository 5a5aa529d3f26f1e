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
                # Cut only once every worker runs: the budget is measured from there.
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


@pytest.fixture
def database_behind_proxy(tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url):
    """A Deployment (schema upgraded, nothing started) whose database is reached through
    a proxy, with the database's retry budget at 60 x 0.5 s; yields both."""
    with scratch_database(postgresql_admin) as database_url:
        with TcpProxy(*target(database_url)) as proxy:
            queue_name = f"test-partition-start-{time.monotonic_ns()}"
            cluster = Deployment(
                tmp_path,
                database_url=through(database_url, proxy),
                queue_url=rabbitmq_server,
                queue_name=queue_name,
                redis_url=redis_server,
                ironic_url=ironic_url,
                options={"database": {"max_retries": 60, "retry_interval": INTERVAL}},
            )
            with cluster, contextlib.ExitStack() as cleanup:
                cleanup.callback(delete_queues, rabbitmq_server, queue_name)
                cluster.upgrade()
                yield cluster, proxy


def test_processes_started_before_the_database_wait_for_it(database_behind_proxy, ironic_api):
    """A host's boot may start Inspector before its database answers: the API and the
    worker retry within [database] max_retries x retry_interval, then serve."""
    cluster, proxy = database_behind_proxy
    proxy.cut()
    api = cluster.start_api(wait=False)
    cluster.start_worker()
    for process in (api, *cluster.workers):
        wait_for(
            lambda p=process: "database unreachable for" in p.log_text(),
            30,
            message=lambda p=process: f"{p.name} retrying the database\n{p.log_text()}",
        )
    cluster.check_alive()

    proxy.restore()
    cluster.wait_ready(api)
    cluster.wait_workers()
    node = ironic_api.enroll()["uuid"]
    start(cluster, node)
    assert post_continue(cluster, ipa_payload(macs(ironic_api, node))).status_code == 200
    assert wait_state(cluster, node, "finished")["error"] is None


def test_a_database_down_longer_than_the_budget_stops_start_up(database_behind_proxy):
    cluster, proxy = database_behind_proxy
    proxy.cut()
    cluster.sections["database"]["max_retries"] = RETRIES
    cluster.write_config()
    worker = cluster.start_worker()
    api = cluster.start_api(wait=False)
    for process in (worker, api):
        assert process.popen.wait(timeout=RETRIES * INTERVAL + 30) == 1, process.log_text()
        assert "gave up on database" in process.log_text(), process.log_text()
