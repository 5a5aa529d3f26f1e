"""memcached as the DLM, as ironic-inspector's configurations had it (`[coordination]
backend_url = memcached://...`): `inspector all` takes its leader lease and membership in
the real memcached, and so do two `inspector worker` processes without `[coordination]
single_host` (as ironic-inspector's split mode ran on it), each warning once what
memcached cannot promise, which `inspector status` says too; one leader at a time,
fail-over after kill -9 with runs that never overlap."""

import json
import signal
import time
import uuid

import pytest
from pymemcache.client.base import Client

from inspector.coordination import backends, connect
from tests.dlm_servers import dlm_url
from tests.integration.cluster import free_port, running_deployment, wait_for
from tests.integration.test_cli import get, running
from tests.integration.test_singletons import Runs, assert_no_overlap, leader_pid, pid_of

pytestmark = pytest.mark.integration

#: The periodic tasks' election: its lease (tooz's key) and its group.
LEADER_KEY = b"__TOOZ_LOCK_inspector-leader-periodic"
GROUP = "inspector-periodic"
LEASE = 2


@pytest.fixture
def memcached_url():
    return f"{dlm_url('memcached')}?timeout=5"


@pytest.fixture
def memcached(memcached_url):
    """A raw client of the same server: what tooz stored, as bytes."""
    host, port = memcached_url.split("://")[1].split("?")[0].split(":")
    client = Client((host, int(port)), connect_timeout=5, timeout=5)
    yield client
    client.close()


@pytest.fixture
def observer(memcached_url):
    """Another member of the DLM, looking from outside the processes under test."""
    coordinator = connect(memcached_url, f"observer-{uuid.uuid4().hex[:6]}")
    coordinator.start()
    yield coordinator
    coordinator.stop()


def test_inspector_all_leads_through_memcached(tmp_path, memcached_url, memcached, observer):
    host = f"memcached-{uuid.uuid4().hex[:8]}"
    port = free_port()
    path = tmp_path / "inspector.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\nlisten_port = {port}\nhost = {host}\n"
        f"clean_up_period = 0.2\n"
        f"[coordination]\nbackend_url = {memcached_url}\nlease_timeout = {LEASE}\n"
    )
    with running(["all", "--config-file", str(path)], tmp_path / "log") as process:
        member = f"{host}-{process.pid}"
        wait_for(lambda: get(f"http://127.0.0.1:{port}/"), 30, 0.1, "the API")
        # Its periodic leadership is a lease in memcached, held by its member id...
        wait_for(lambda: memcached.get(LEADER_KEY) == member.encode(), 30, 0.1, "the lease")
        assert member in observer.members(GROUP)
        # ... which excludes any other member, past two of its timeouts (renewed).
        until = time.monotonic() + 2 * (LEASE + 1)
        while time.monotonic() < until:
            assert observer.try_lease("inspector-leader-periodic") is None
            assert process.poll() is None
            time.sleep(0.2)  # the pace of the check, not a wait for a condition
        assert memcached.get(LEADER_KEY) == member.encode()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    # Its lease released and its membership left on the way out, not left to expire.
    assert memcached.get(LEADER_KEY) is None
    assert member not in observer.members(GROUP)
    taken = observer.try_lease("inspector-leader-periodic")
    assert taken is not None
    taken.release()


@pytest.fixture
def workers(tmp_path, postgresql_admin, redis_server, ironic_url, memcached_url):
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=redis_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=0,
        workers=2,
        options={
            "DEFAULT": {"clean_up_period": 0.2},
            "coordination": {
                "backend_url": memcached_url,
                "lease_timeout": LEASE,
                "election_interval": 0.2,
            },
        },
    ) as deployment:
        yield deployment


def test_workers_share_memcached_one_leader_at_a_time(workers, memcached):
    caveat = backends.caveat("memcached://")
    runs = Runs(workers.database_url)
    wait_for(lambda: len(runs.all("expiry")) >= 5, 30, message="periodic runs")
    assert len(runs.holders()) == 1, "more than one worker ran periodic tasks"
    for worker in workers.workers:
        assert worker.log_text().count(caveat) == 1, worker.log_text()
    answer = workers.run("status", "--json", "--wait", "2")
    reports = {report["name"]: report for report in json.loads(answer.stdout)}
    said = reports["singletons"]["data"]["status"]["message"]
    assert f"DLM caveat: {caveat}" in said, answer.stdout
    leader = next(p for p in workers.workers if p.pid == leader_pid(runs))
    holder = memcached.get(LEADER_KEY)
    assert holder is not None and pid_of(holder.decode()) == leader.pid
    moment = runs.now()
    leader.popen.kill()
    leader.popen.wait(10)
    new = wait_for(
        lambda: [r for r in runs.after(moment) if pid_of(r.holder) != leader.pid],
        LEASE * 3 + 10,
        message="the other worker's runs",
    )
    assert pid_of(new[0].holder) != leader.pid
    wait_for(lambda: len(runs.after(moment)) >= 5, 30, message="more periodic runs")
    assert len(runs.holders()) == 2
    assert_no_overlap(runs, {leader.pid})
    terms = [row.term for row in runs.all()]
    assert terms == sorted(terms), "a run of an older term after a newer one"
    holder = memcached.get(LEADER_KEY)
    assert holder is not None and pid_of(holder.decode()) == pid_of(new[0].holder)
