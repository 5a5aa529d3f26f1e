"""Expected errors are one log line naming the node and the request; a stack only for
an unexpected exception (or with debug on): the worker's task failures, the pool, the
periodic runner, the API's 5xx, the firewall's polls and announcement handlers."""

import logging

import flask
import pytest

from inspector import errors
from inspector.api import errors as api_errors
from inspector.broker.channels import INTROSPECTION_ENDED, LocalChannel
from inspector.broker.message import Request
from inspector.coordination import LocalCoordinator
from inspector.firewall.lists import MacList
from inspector.firewall.sources import Poller
from inspector.lifecycle import Lifecycle, Outages
from inspector.machine import Task
from inspector.periodic.runner import Runner
from inspector.periodic.tasks import PeriodicTask
from inspector.processing.context import ProcessingError
from inspector.worker.handler import Handler
from inspector.worker.pool import Pool
from inspector.worker.tasks import NoTasks
from tests.unit.test_handler import FakeDelivery, RecordingQueue
from tests.unit.test_periodic import leadership

NODE = "6f6e3e5e-0c36-4bd6-9d5a-1b2f4b4b0d6a"
SECRET = "hunter2-Zq9"


class FailingTasks(NoTasks):
    """Processing raises the given exception; the start does nothing."""

    def __init__(self, exc):
        self.exc = exc

    def run(self, node, request, transition):
        if transition.task is Task.PROCESS:
            raise self.exc


def run_failing_task(store, exc):
    handler = Handler(store, LocalCoordinator(), RecordingQueue(), FailingTasks(exc))
    for event, request_id in (("inspect", "req-1"), ("continue", "req-2")):
        request = Request(node_uuid=NODE, event=event, request_id=request_id)
        handler.handle(FakeDelivery(request))
    assert store.get_node(NODE).state == "error"


def failures(caplog, text):
    return [r for r in caplog.records if text in r.getMessage()]


@pytest.mark.parametrize(
    "exc",
    [
        ProcessingError("Introspection rule r1 failed: bad data"),
        errors.NotFound("Node 6f6e... was not found in Ironic"),
        errors.NodeBusy("Node is locked by host conductor-1"),
    ],
)
def test_an_expected_task_failure_is_one_line_with_node_and_request(store, caplog, exc):
    caplog.set_level(logging.INFO)
    run_failing_task(store, exc)
    (record,) = failures(caplog, "task failed")
    assert record.levelno == logging.ERROR
    assert not record.exc_info
    assert record.getMessage().startswith(f"[node {NODE} req req-2 continue] task failed: ")
    assert exc.message in record.getMessage()
    assert not any(r.exc_info for r in caplog.records)
    assert "Traceback" not in caplog.text


def test_an_unexpected_task_failure_keeps_its_stack(store, caplog):
    caplog.set_level(logging.INFO)
    run_failing_task(store, RuntimeError("hook exploded"))
    (record,) = failures(caplog, "task failed")
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert "Traceback" in caplog.text


def test_debug_gives_an_expected_failure_its_stack(store, caplog):
    caplog.set_level(logging.DEBUG)
    run_failing_task(store, ProcessingError("no interfaces"))
    (record,) = failures(caplog, "task failed")
    assert record.exc_info is not None and record.exc_info[0] is ProcessingError


def test_a_task_failure_quoting_data_is_shortened_and_masked(store, caplog):
    caplog.set_level(logging.INFO)
    data = {"bmc_password": SECRET, **{f"field{i}": "x" * 40 for i in range(100)}}
    run_failing_task(store, ProcessingError(f"Introspection rule r1 failed: {data}"))
    (record,) = failures(caplog, "task failed")
    assert SECRET not in record.getMessage()
    assert "'bmc_password': '***'" in record.getMessage()
    assert len(record.getMessage()) < 700
    # The node's error, for its API, is whole.
    assert SECRET in store.get_node(NODE).error


class RaisingHandler:
    def __init__(self, exc):
        self.exc = exc

    def handle(self, delivery):
        raise self.exc


class OneDelivery:
    def __init__(self, delivery):
        self.delivery = delivery

    def get(self, timeout, *, starts=True):
        delivery, self.delivery = self.delivery, None
        return delivery


@pytest.mark.parametrize(
    ("exc", "stack"), [(errors.Conflict("version moved"), False), (KeyError("bug"), True)]
)
def test_the_pool_logs_a_step_that_failed_with_its_node_and_request(caplog, exc, stack):
    caplog.set_level(logging.INFO)
    delivery = FakeDelivery(Request(node_uuid=NODE, event="wait", request_id="req-9"))
    pool = Pool(OneDelivery(delivery), RaisingHandler(exc), Lifecycle(), size=1, get_timeout=0)
    assert pool.step()
    (record,) = failures(caplog, "Request not applied")
    assert record.getMessage().startswith(f"[node {NODE} req req-9 wait] Request not applied")
    assert bool(record.exc_info) is stack
    assert delivery.outcome == "retry"


@pytest.mark.parametrize(
    ("exc", "stack"), [(errors.Conflict("Ironic said no"), False), (RuntimeError("bug"), True)]
)
def test_the_periodic_runner_logs_its_own_errors_as_one_line(store, caplog, exc, stack):
    caplog.set_level(logging.INFO)

    def failing(_leadership):
        raise exc

    task = PeriodicTask("sync", 60.0, failing)
    Runner(store, [task], Outages(Lifecycle(), {})).run_once(task, leadership(store))
    (record,) = failures(caplog, "Periodic task sync failed")
    assert record.levelno == logging.ERROR
    assert bool(record.exc_info) is stack


@pytest.fixture
def flask_client():
    app = flask.Flask("test")
    api_errors.register(app)

    @app.get("/v1/introspection/<node>")
    def expected(node):
        raise errors.ServiceUnavailable(f"Ironic unreachable at rabbit://u:{SECRET}@h//")

    @app.get("/v1/rules")
    def unexpected():
        raise RuntimeError("bug")

    return app.test_client()


def test_the_api_logs_its_own_5xx_as_one_line(flask_client, caplog):
    caplog.set_level(logging.INFO)
    request_id = "req-0b9c5f0e-7d1d-4a8e-9a47-2f5d3c1b6e21"
    answer = flask_client.get(f"/v1/introspection/{NODE}", headers={"X-Request-ID": request_id})
    assert answer.status_code == 503
    (record,) = failures(caplog, "failed")
    assert record.getMessage().startswith(
        f"Request GET /v1/introspection/{NODE} (req {request_id}) failed: Ironic unreachable"
    )
    assert not record.exc_info
    assert SECRET not in record.getMessage()


def test_the_api_logs_an_unexpected_error_with_its_stack(flask_client, caplog):
    caplog.set_level(logging.INFO)
    assert flask_client.get("/v1/rules").status_code == 500
    (record,) = failures(caplog, "Unexpected error")
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def raising(exc):
    def fail(*_args):
        raise exc

    return fail


@pytest.mark.parametrize(
    ("exc", "stack"), [(errors.Conflict("store refused"), False), (RuntimeError("bug"), True)]
)
def test_a_firewall_poll_logs_its_own_errors_as_one_line(caplog, exc, stack):
    caplog.set_level(logging.INFO)
    poller = Poller(
        MacList("whitelist"), raising(exc), 60.0, on_change=lambda: None, lifecycle=Lifecycle()
    )
    assert poller.poll() is False
    (record,) = failures(caplog, "Polling the whitelist failed")
    assert bool(record.exc_info) is stack


@pytest.mark.parametrize(
    ("exc", "stack"), [(errors.FirewallError("iptables: busy"), False), (KeyError("bug"), True)]
)
def test_an_announcement_handler_logs_its_own_errors_as_one_line(caplog, exc, stack):
    caplog.set_level(logging.INFO)
    channel = LocalChannel()
    channel.subscribe(raising(exc))
    channel.deliver(INTROSPECTION_ENDED, {"node_uuid": NODE})
    (record,) = failures(caplog, f"Handling the announcement {INTROSPECTION_ENDED} failed")
    assert bool(record.exc_info) is stack
