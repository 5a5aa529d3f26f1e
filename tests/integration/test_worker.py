"""Worker processes on real services: RabbitMQ (queue), Redis (tooz locks), PostgreSQL.

Crash-safety as a user would see it: kill -9 at the worst moment, conflicting requests
from several producers, SIGTERM in the middle of a task.
"""

import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from inspector.machine import Event, Machine, State
from inspector.store import Store, schema
from tests import fixtures
from tests.integration.cluster import POOL_STARTED

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).parents[2]
IPA_PAYLOAD = fixtures.IPA
GET_TIMEOUT = 0.5


def wait_for(predicate, timeout=60.0, interval=0.05, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)  # polling a condition with a deadline
    raise AssertionError(f"{message} not met within {timeout} s")


class Cluster:
    """Worker processes sharing one database, one queue and one DLM."""

    def __init__(self, tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, ironic_api):
        self.ironic_api = ironic_api
        self.tmp_path = tmp_path
        self.queue_url = rabbitmq_url
        self.queue_name = queue_name
        self.config = tmp_path / "inspector.conf"
        self.config.write_text(
            f"""[DEFAULT]
state_path = {tmp_path}
host = test-host
[database]
connection = {postgresql_url}
[queue]
transport_url = {rabbitmq_url}
queue_name = {queue_name}
[coordination]
backend_url = {redis_url.split("/0")[0]}?timeout=5
[worker]
pool_size = 4
get_timeout = {GET_TIMEOUT}
[ironic]
auth_type = none
endpoint_override = {ironic_api.url}
max_retries = 3
retry_interval = 0.5
"""
        )
        schema.upgrade(postgresql_url)
        self.store = Store.from_url(postgresql_url)
        self.queue = WorkQueue(rabbitmq_url, queue_name)
        self.processes: list[subprocess.Popen] = []
        self.logs = []

    def start_worker(self, faults: str = "", marker: pathlib.Path | None = None):
        env = dict(os.environ)
        env.pop("INSPECTOR_FAULTS", None)
        if faults:
            env["INSPECTOR_FAULTS"] = faults
        if marker:
            env["INSPECTOR_FAULTS_MARKER"] = str(marker)
        log = open(self.tmp_path / f"worker-{len(self.processes)}.log", "w")
        self.logs.append(log)
        process = subprocess.Popen(
            [sys.executable, "-m", "inspector.cmd", "worker", "--config-file", str(self.config)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def new_node(self):
        """A node in the real Ironic (the start task reads its ports and powers it)."""
        return self.ironic_api.enroll(manage=False)["uuid"]

    def store_ramdisk_data(self, node):
        """What /v1/continue stores: a real IPA payload with the node's MAC."""
        payload = json.loads(IPA_PAYLOAD.read_text())
        mac = self.ironic_api.node_ports(node)[0]["address"]
        for interface in payload["inventory"]["interfaces"]:
            interface["mac_address"] = mac
        self.store.store_data(node, payload, processed=False)

    def put(self, node, event, request_id=None):
        request = Request(node_uuid=node, event=event, request_id=request_id or uuid.uuid4().hex)
        self.queue.put(request)
        return request

    def state(self, node):
        try:
            return self.store.get_node(node).state
        except Exception:
            return None

    def wait_state(self, node, state, timeout=60.0):
        wait_for(lambda: self.state(node) == state, timeout, message=f"{node} in {state}")

    def wait_done(self, request, timeout=30.0):
        """Until the request is done: a worker marks it so after the node's last commit,
        which wait_state may see first."""
        wait_for(
            lambda: self.store.find_request(request.request_id).status == "done",
            timeout,
            message=f"request {request.request_id} done",
        )

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()
        for log in self.logs:
            log.close()
        self.queue.close()
        self.store.close()


@pytest.fixture
def cluster(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, ironic_api):
    cluster = Cluster(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, ironic_api)
    yield cluster
    cluster.close()


def assert_valid_history(store, node):
    """Applied rows chain through the state table, versions without gaps or repeats."""
    machine = Machine()
    applied = [r for r in store.history(node) if r.status != "rejected"]
    applied.sort(key=lambda r: r.version)
    previous_state, previous_version = None, None
    for row in applied:
        assert row.source_state == previous_state, (node, row)
        source = State(row.source_state) if row.source_state else None
        assert machine.advance(source, Event(row.event)).target == row.target_state, row
        if previous_version is not None:
            assert row.version == previous_version + 1, (node, row)
        previous_state, previous_version = row.target_state, row.version
    assert previous_state == store.get_node(node).state
    return applied


def test_kill_before_ack_of_a_strict_event_applies_its_follow_up_later(cluster, tmp_path):
    node = cluster.new_node()
    marker = tmp_path / "paused"
    victim = cluster.start_worker(faults="pause_before_ack=continue", marker=marker)
    cluster.put(node, "inspect")
    cluster.wait_state(node, "waiting")
    cluster.store_ramdisk_data(node)
    request = cluster.put(node, "continue")
    wait_for(lambda: marker.exists() and request.request_id in marker.read_text())
    # Processed, marked ran, and killed before its `finish`.
    assert cluster.state(node) == "processing"
    assert cluster.store.find_request(request.request_id).status == "ran"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    cluster.start_worker()
    # The redelivery applies the `finish` the dead worker never did; no deja vu.
    cluster.wait_state(node, "finished")
    assert cluster.store.get_node(node).error is None
    applied = assert_valid_history(cluster.store, node)
    assert [r.event for r in applied] == ["inspect", "wait", "continue", "finish"]
    cluster.wait_done(request)
    # The second worker did not process the data again: it only applied the follow-up.
    log = pathlib.Path(cluster.logs[-1].name)
    wait_for(lambda: "its task already ran" in log.read_text(), timeout=10)
    assert f"{request.request_id} continue] applied" not in log.read_text()


def test_kill_mid_task_of_a_strict_event_processes_the_data_once_more(cluster):
    node = cluster.new_node()
    victim = cluster.start_worker(faults="slow_task=continue:600")
    cluster.put(node, "inspect")
    cluster.wait_state(node, "waiting")
    cluster.store_ramdisk_data(node)
    request = cluster.put(node, "continue")
    # Committed, and its task held up: the worker dies before processing finished.
    cluster.wait_state(node, "processing")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    cluster.start_worker()
    cluster.wait_state(node, "finished")
    applied = assert_valid_history(cluster.store, node)
    assert [r.event for r in applied] == ["inspect", "wait", "continue", "finish"]
    cluster.wait_done(request)


def test_kill_before_ack_of_a_reentrant_event_ends_right_once(cluster, tmp_path):
    node = cluster.new_node()
    marker = tmp_path / "paused"
    victim = cluster.start_worker(faults="pause_before_ack=inspect", marker=marker)
    request = cluster.put(node, "inspect")
    wait_for(lambda: marker.exists() and request.request_id in marker.read_text())
    assert cluster.state(node) == "starting"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    cluster.start_worker()
    cluster.wait_state(node, "waiting")
    applied = assert_valid_history(cluster.store, node)
    assert [r.event for r in applied] == ["inspect", "wait"]
    cluster.wait_done(request)


def test_conflicting_requests_from_several_producers(cluster):
    nodes = [cluster.new_node() for _ in range(50)]
    for _ in range(2):
        cluster.start_worker()
    for node in nodes:
        cluster.put(node, "inspect")
    for node in nodes:
        cluster.wait_state(node, "waiting", timeout=120)
        cluster.store_ramdisk_data(node)

    events = ["inspect", "wait", "continue", "finish", "abort", "timeout", "error", "reapply"]
    sent: list[Request] = []
    lock = threading.Lock()

    def produce(seed):
        rng = random.Random(seed)
        producer = WorkQueue(cluster.queue_url, cluster.queue_name)
        try:
            for node in nodes:
                for _ in range(10 // 2):
                    request = Request(node_uuid=node, event=rng.choice(events))
                    producer.put(request)
                    with lock:
                        sent.append(request)
        finally:
            producer.close()

    producers = [threading.Thread(target=produce, args=(seed,)) for seed in range(2)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join()
    assert len(sent) == 50 * 10

    def settled():
        records = [cluster.store.find_request(r.request_id) for r in sent]
        return all(r is not None and r.status in ("done", "rejected") for r in records)

    wait_for(settled, timeout=240, interval=0.5, message="every request applied or refused")
    for node in nodes:
        # Follow-ups (wait, finish) may still be on their way: let them land.
        wait_for(
            lambda node=node: cluster.state(node) not in ("starting", "processing", "reapplying"),
            timeout=60,
        )
        assert_valid_history(cluster.store, node)
    for request in sent:
        assert cluster.store.find_request(request.request_id).node_uuid == request.node_uuid


def test_sigterm_while_a_task_runs(cluster):
    node = cluster.new_node()
    task_seconds = 3.0
    worker = cluster.start_worker(faults=f"slow_task=inspect:{task_seconds}")
    request = cluster.put(node, "inspect")
    cluster.wait_state(node, "starting")
    started = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=GET_TIMEOUT + task_seconds + 10) == 0
    elapsed = time.monotonic() - started
    assert elapsed < GET_TIMEOUT + task_seconds + 10
    # The task finished before the exit: its request is done and its follow-up queued.
    assert cluster.store.find_request(request.request_id).status == "done"
    cluster.start_worker()
    cluster.wait_state(node, "waiting")
    assert [r.event for r in assert_valid_history(cluster.store, node)] == ["inspect", "wait"]


def test_second_sigterm_exits_at_once_and_the_request_comes_back(cluster):
    node = cluster.new_node()
    worker = cluster.start_worker(faults="slow_task=inspect:30")
    request = cluster.put(node, "inspect")
    cluster.wait_state(node, "starting")
    worker.send_signal(signal.SIGTERM)
    # Two signals sent back to back reach Python's handler as one: wait for the first.
    log = pathlib.Path(cluster.logs[-1].name)
    wait_for(lambda: "Stopping: received SIGTERM" in log.read_text(), timeout=10)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=10) == 143
    assert cluster.store.find_request(request.request_id).status == "applied"
    cluster.start_worker()
    cluster.wait_state(node, "waiting")
    cluster.wait_done(request)


def _tgkill(pid: int, tid: int, signum: int) -> None:
    """Send signum to one thread (tid) of process pid, as the kernel may pick any thread
    that does not block it for a signal sent to the process."""
    import ctypes  # noqa: PLC0415 - this test only

    libc = ctypes.CDLL(None, use_errno=True)
    sys_tgkill = 234  # x86_64; aarch64 is 131
    if os.uname().machine == "aarch64":
        sys_tgkill = 131
    if libc.syscall(sys_tgkill, pid, tid, signum) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}, {signum})")


def test_a_sigterm_given_to_any_thread_of_a_worker_stops_it(cluster):
    """A SIGTERM that the kernel hands to one of the worker's other threads (Python runs
    handlers in the main thread only) stops it all the same: its main thread's wait
    must wake for it (an untimed wait held such a SIGTERM until another signal came:
    the firewall leader kept its PXE service open and its lease)."""
    worker = cluster.start_worker()
    log = pathlib.Path(cluster.logs[-1].name)
    wait_for(lambda: POOL_STARTED in log.read_text(), timeout=30)
    threads = [int(t) for t in os.listdir(f"/proc/{worker.pid}/task") if int(t) != worker.pid]
    assert threads, "the worker runs threads besides its main one"
    _tgkill(worker.pid, threads[-1], signal.SIGTERM)
    assert worker.wait(timeout=20) == 0, log.read_text()
    assert "Stopping: received SIGTERM" in log.read_text()
