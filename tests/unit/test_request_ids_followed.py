"""One request followed by its ids: the answer's X-OpenStack-Request-Id (oslo.middleware's
RequestId), the global request id the API passes on (the client's, HAProxy's, or its own)
to Ironic and, on the queued request, to the worker, whose log lines and Ironic calls
show it. Flask's test client, real store (SQLite), FakeIronic recording each call's
headers, the worker's real handler and tasks."""

import json
import logging
import re
import uuid

import pytest
import yaml

from inspector import request_context
from inspector.api.logs import setup_logging
from inspector.broker.message import Request
from inspector.coordination import LocalCoordinator
from inspector.worker.handler import Handler
from inspector.worker.tasks import Tasks
from tests.unit.conftest import RecordingQueue
from tests.unit.test_handler import FakeDelivery
from tests.unit.test_openapi import DOCUMENT, deref, operations

V = {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}
OWN_ID = re.compile(r"req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEADER = request_context.GLOBAL_ID_HEADER


def global_id() -> str:
    return f"req-{uuid.uuid4()}"


@pytest.fixture
def node(ironic):
    node = ironic.add_node(name="node-1", provision_state="manageable")
    ironic.add_port(node.uuid, "52:54:00:12:34:56")
    return node


def start(client, ident, **headers):
    return client.post(f"/v1/introspection/{ident}", headers={**V, **headers})


def own_id(response) -> str:
    value = response.headers["X-OpenStack-Request-Id"]
    assert OWN_ID.fullmatch(value), value
    return value


def ironic_ids(ironic) -> list:
    return [call.headers.get(HEADER) for call in ironic.history]


# ---------------------------------------------------------------- the API


def test_every_answer_names_a_request_id_of_its_own(client, node):
    answers = [
        client.get("/"),
        client.get("/v1"),
        client.get(f"/v1/introspection/{uuid.uuid4()}", headers=V),  # 404
        client.put("/v1/introspection", headers=V),  # 405
        start(client, node.uuid),  # 202
        client.post("/v1/continue", data=b"{", headers={"Content-Type": "application/json"}),
    ]
    assert [a.status_code for a in answers] == [200, 200, 404, 405, 202, 400]
    ids = [own_id(answer) for answer in answers]
    assert len(set(ids)) == len(ids)
    assert all(len(answer.headers.getlist("X-OpenStack-Request-Id")) == 1 for answer in answers)


def test_the_api_document_names_it_on_every_answer():
    document = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    for key, operation in operations(document).items():
        for code, response in operation["responses"].items():
            headers = deref(document, response).get("headers", {})
            assert "X-OpenStack-Request-Id" in headers, (key, code)


def test_a_global_request_id_from_the_client_is_passed_on(client, node, ironic, queue):
    """As oslo.middleware honours one: the client's well-formed X-OpenStack-Request-ID
    is the global request id; the answer names the request's own id."""
    sent = global_id()
    answer = start(client, node.uuid, **{"X-OpenStack-Request-ID": sent})
    assert answer.status_code == 202
    assert own_id(answer) != sent
    assert ironic_ids(ironic) == [sent]  # the node read for the start
    [queued] = queue.requests
    assert queued.global_request_id == sent
    # No proxy's id: recorded under the client's id (a retry of it is the same request).
    assert queued.request_id == sent


@pytest.mark.parametrize(
    "sent",
    [
        "req-not-a-uuid-at-all-0000000000000000",
        # Fixed values: the same test ids in every collection (pytest-xdist's workers).
        "REQ-1850b2aa-2090-4701-b398-f7089601644c",
        "req-852F9D4C-28F6-408D-97B9-5B06DABB441C",
        "3c6f5d94-38e4-4cbf-8384-ec8ba8de65e7",
        "req-4faec5e9-bf5b-46ae-a58c-7369ea50951e trailing",
    ],
)
def test_a_malformed_global_request_id_is_not_passed_on(client, node, ironic, queue, sent):
    answer = start(client, node.uuid, **{"X-OpenStack-Request-ID": sent})
    assert answer.status_code == 202
    own = own_id(answer)
    assert ironic_ids(ironic) == [own]
    assert queue.requests[0].global_request_id == own


def test_haproxys_request_id_is_the_global_id_of_all_its_attempts(client, node, ironic, queue):
    """HAProxy's X-Request-ID (a UUID) stays what the request is recorded under for its
    retries, and is the global request id of every attempt, as `req-<uuid>`."""
    proxy_id = str(uuid.uuid4()).upper()
    first = start(client, node.uuid, **{"X-Request-ID": proxy_id})
    again = start(client, node.uuid, **{"X-Request-ID": proxy_id})  # a retry: answered as then
    assert (first.status_code, again.status_code) == (202, 202)
    assert own_id(first) != own_id(again)
    expected = f"req-{proxy_id.lower()}"
    assert ironic_ids(ironic) == [expected, expected]
    # Enqueued again by the retry (no worker took it yet), under the same ids.
    assert {(r.request_id, r.global_request_id) for r in queue.requests} == {(proxy_id, expected)}


def test_the_client_global_id_wins_over_the_proxys(client, node, ironic, queue):
    sent, proxy_id = global_id(), str(uuid.uuid4())
    start(client, node.uuid, **{"X-Request-ID": proxy_id, "X-OpenStack-Request-ID": sent})
    assert ironic_ids(ironic) == [sent]
    [queued] = queue.requests
    assert (queued.request_id, queued.global_request_id) == (proxy_id, sent)


def test_a_request_without_ids_is_recorded_under_its_own(client, node, ironic, queue, store):
    answer = start(client, node.uuid)
    own = own_id(answer)
    [queued] = queue.requests
    assert (queued.request_id, queued.global_request_id) == (own, own)
    assert [r.request_id for r in store.history(node.uuid)] == [own]
    assert ironic_ids(ironic) == [own]


def test_no_context_outlives_its_request(client, node):
    start(client, node.uuid, **{"X-OpenStack-Request-ID": global_id()})
    assert request_context.current() is None
    assert request_context.outgoing_headers() == {}


def test_the_api_log_lines_of_a_request_show_its_ids_and_node(
    client, node, conf, tmp_path, logging_state
):
    log = tmp_path / "api.log"
    conf.set_override("log_file", str(log))
    setup_logging(conf)
    sent = global_id()
    own = own_id(start(client, node.uuid, **{"X-OpenStack-Request-ID": sent}))
    logging.getLogger("inspector.test").info("outside any request")
    lines = log.read_text().splitlines()
    [started] = [line for line in lines if "-> starting (API)" in line]
    # oslo.log's logging_context_format_string: [global own user project domain
    # system_scope user_domain project_domain] and the node as instance_uuid_format says.
    assert f"[{sent} {own} - - - all - -] [node {node.uuid}] " in started
    # Named once: the commit's own prefix leaves the node to the context's.
    assert started.count(node.uuid) == 1, started
    assert f"[node {node.uuid}] [req " in started
    [outside] = [line for line in lines if "outside any request" in line]
    assert f"{sent}" not in outside and "[-]" in outside


def test_the_node_a_route_names_by_name_is_in_the_log_context(
    client, node, conf, tmp_path, logging_state
):
    log = tmp_path / "api.log"
    conf.set_override("log_file", str(log))
    conf.set_override("use_json", True)
    setup_logging(conf)
    start(client, node.name)
    [started] = [
        json.loads(line)
        for line in log.read_text().splitlines()
        if "-> starting (API)" in json.loads(line)["message"]
    ]
    assert started["context"]["resource_uuid"] == node.uuid
    assert OWN_ID.fullmatch(started["context"]["request_id"])


# ---------------------------------------------------------------- the worker


def handle(store, ironic, request: Request, conf) -> FakeDelivery:
    delivery = FakeDelivery(request)
    Handler(store, LocalCoordinator(), RecordingQueue(), Tasks(store, ironic, conf)).handle(
        delivery
    )
    return delivery


class ContextRecorder(logging.Handler):
    """The request context each record of the worker's got (the set-up's filter)."""

    def __init__(self):
        super().__init__()
        self.addFilter(request_context.ContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def recorder():
    handler = ContextRecorder()
    logger = logging.getLogger("inspector")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_the_worker_logs_and_calls_ironic_under_the_global_id(
    client, node, ironic, queue, store, recorder, conf
):
    sent = global_id()
    start(client, node.uuid, **{"X-OpenStack-Request-ID": sent})
    # As it travels on the queue.
    [queued] = queue.requests
    request = Request.from_json(queued.to_json())
    ironic.history.clear()
    assert handle(store, ironic, request, conf).outcome == "ack"
    assert store.get_node(node.uuid).state == "waiting"
    calls = [(call.name, call.headers.get(HEADER)) for call in ironic.history]
    assert ("set_power_state", sent) in calls
    assert {header for _name, header in calls} == {sent}
    mine = [r for r in recorder.records if r.name.startswith("inspector.worker")]
    assert mine
    for record in mine:
        assert record.context.global_request_id == sent, record.getMessage()
        assert record.context.request_id == request.request_id
    # The worker's context names no node: its commit lines do.
    commits = [
        r.getMessage()
        for r in recorder.records
        if r.name == "inspector.commit" and not r.getMessage().endswith("(API)")
    ]
    assert commits and all(m.startswith(f"[node {node.uuid} req ") for m in commits), commits
    assert request_context.current() is None


def test_a_request_from_an_older_api_is_handled_without_a_global_id(
    client, node, ironic, queue, store, recorder, conf
):
    own = own_id(start(client, node.uuid))
    body = queue.requests[0].to_dict()
    del body["global_request_id"]  # as an older API enqueued it (a rolling upgrade)
    request = Request.from_json(json.dumps(body))
    assert request.global_request_id is None
    ironic.history.clear()
    assert handle(store, ironic, request, conf).outcome == "ack"
    # oslo.context's global_id: the request's own id, when it is one Ironic takes.
    assert ironic.history and set(ironic_ids(ironic)) == {own}
    mine = [r for r in recorder.records if r.name.startswith("inspector.worker")]
    assert mine and {r.context.global_request_id for r in mine} == {None}
