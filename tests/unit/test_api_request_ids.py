"""A request sent again (HAProxy's L7 retry, same X-Request-ID) after its first attempt took
effect is answered as that attempt was and takes effect once; another request is not.
Flask's test client, real store (SQLite), fake Ironic, recording queue."""

import datetime
import uuid

import pytest

from inspector.api import intents, request_ids
from inspector.errors import ServiceUnavailable
from inspector.machine import State
from tests.api_steps import V, abort, move, start


def rid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def node(ironic):
    return ironic.add_node(name="node-1", provision_state="manageable")


# ---------------------------------------------------------------- the headers


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        (
            {"X-Request-ID": "6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11"},
            "6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11",
        ),
        (
            {"X-OpenStack-Request-ID": "req-6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11"},
            "req-6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11",
        ),
        # The proxy's first: it is per request, the client's may be a global id.
        ({"X-Request-ID": "a" * 32, "X-OpenStack-Request-ID": "b" * 32}, "a" * 32),
        # Not well-formed: ignored, the next header read.
        ({"X-Request-ID": "short", "X-OpenStack-Request-ID": "b" * 32}, "b" * 32),
        ({"X-Request-ID": "a" * 41}, None),
        ({"X-Request-ID": "a" * 16 + ".wait"}, None),
        ({"X-Request-ID": "a" * 16 + " x"}, None),
        ({"X-Request-ID": "a" * 8 + "\n" + "a" * 8}, None),
        ({"X-Request-ID": " " + "a" * 16 + " "}, "a" * 16),
    ],
)
def test_incoming_takes_the_first_well_formed_id(headers, expected):
    assert request_ids.incoming(headers) == expected


# ---------------------------------------------------------------- start


def test_a_start_sent_again_is_202_and_starts_once(client, node, store, queue):
    request_id = rid()
    assert start(client, node.uuid, request_id).status_code == 202
    first = store.get_node(node.uuid)
    move(store, node.uuid, "wait", State.WAITING)  # its worker took it meanwhile
    response = start(client, node.uuid, request_id)
    assert response.status_code == 202, response.json
    assert response.json == {}
    assert store.get_node(node.uuid).state == State.WAITING
    assert [r.request_id for r in queue.requests] == [request_id]
    recorded = store.find_request(request_id)
    assert (recorded.node_uuid, recorded.event, recorded.version) == (
        node.uuid,
        "inspect",
        first.version,
    )


def test_a_start_by_another_request_while_one_runs_is_409(client, node, store):
    assert start(client, node.uuid, rid()).status_code == 202
    move(store, node.uuid, "wait", State.WAITING)
    assert start(client, node.uuid, rid()).status_code == 409
    assert start(client, node.uuid).status_code == 409


def test_a_start_whose_first_attempt_died_before_enqueuing_is_enqueued(client, node, store, queue):
    """The first attempt committed, then its process was killed: nobody would ever hand
    the request to a worker, and the node would stay `starting` until the time-out."""
    request_id = rid()
    queue.put = lambda request: (_ for _ in ()).throw(SystemExit("killed"))
    with pytest.raises(SystemExit):
        start(client, node.uuid, request_id)
    assert store.get_node(node.uuid).state == State.STARTING
    del queue.put  # the recording one again
    assert start(client, node.uuid, request_id).status_code == 202
    assert [(r.request_id, r.event) for r in queue.requests] == [(request_id, "inspect")]


def test_a_start_whose_enqueue_failed_is_503_again(client, node, store, queue):
    request_id = rid()

    def broken(request):
        raise ServiceUnavailable("RabbitMQ is gone")

    queue.put = broken
    assert start(client, node.uuid, request_id).status_code == 503
    del queue.put
    response = start(client, node.uuid, request_id)
    assert response.status_code == 503
    assert "queue is unavailable" in response.json["error"]["message"]
    assert store.get_node(node.uuid).state == State.ERROR
    assert queue.requests == []
    # Another request starts it again.
    assert start(client, node.uuid, rid()).status_code == 202


def test_an_id_of_another_request_is_not_reused(client, ironic, node, store, queue):
    """A client reusing its id (a global request id) for another node, event, or much
    later: each is a request of its own."""
    request_id = rid()
    other = ironic.add_node(name="node-2", provision_state="manageable")
    assert start(client, node.uuid, request_id).status_code == 202
    assert start(client, other.uuid, request_id).status_code == 202
    assert store.get_node(other.uuid).state == State.STARTING
    move(store, node.uuid, "wait", State.WAITING)
    assert abort(client, node.uuid, request_id).status_code == 202
    assert store.get_node(node.uuid).state == State.ERROR
    # Much later, the same id starts the node again.
    later = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + intents.REPLAY_WINDOW * 2
    store.clock = lambda: later
    assert start(client, node.uuid, request_id).status_code == 202
    assert store.get_node(node.uuid).state == State.STARTING
    events = [(r.node_uuid, r.event) for r in queue.requests]
    assert events == [
        (node.uuid, "inspect"),
        (other.uuid, "inspect"),
        (node.uuid, "abort"),
        (node.uuid, "inspect"),
    ]
    assert queue.requests[0].request_id == request_id
    assert len({r.request_id for r in queue.requests}) == 4


def test_two_attempts_at_once_start_once(client, node, store, queue, monkeypatch):
    """The second attempt read the node before the first committed: its commit fails,
    and it finds the first attempt's."""
    request_id = rid()
    assert start(client, node.uuid, request_id).status_code == 202
    read = store.load
    stale = iter([(None, None)])
    monkeypatch.setattr(store, "load", lambda *args: next(stale, None) or read(*args))
    assert start(client, node.uuid, request_id).status_code == 202
    assert [r.request_id for r in store.history(node.uuid)] == [request_id]
    assert {r.request_id for r in queue.requests} == {request_id}


# ---------------------------------------------------------------- abort, reapply


def test_an_abort_sent_again_is_202(client, node, store, queue):
    start(client, node.uuid)
    move(store, node.uuid, "wait", State.WAITING)
    request_id = rid()
    assert abort(client, node.uuid, request_id).status_code == 202
    assert abort(client, node.uuid, request_id).status_code == 202
    assert [r.request_id for r in store.history(node.uuid)][-1] == request_id
    # No worker took the abort yet: enqueued again, under its id (the worker does it once).
    assert [(r.event, r.request_id) for r in queue.requests[1:]] == [("abort", request_id)] * 2
    # Another abort of the aborted node is still refused.
    assert abort(client, node.uuid, rid()).status_code == 400
    assert abort(client, node.uuid).status_code == 400


def test_a_reapply_sent_again_is_202(client, node, store, queue):
    start(client, node.uuid)
    for event, target in (("wait", "waiting"), ("continue", "processing"), ("finish", "finished")):
        move(store, node.uuid, event, target)
    url = f"/v1/introspection/{node.uuid}/data/unprocessed"
    request_id = rid()
    headers = {**V, "X-Request-ID": request_id}
    assert client.post(url, json={"inventory": {"a": 1}}, headers=headers).status_code == 202
    assert client.post(url, json={"inventory": {"b": 2}}, headers=headers).status_code == 202
    assert store.get_data(node.uuid, processed=False) == {"inventory": {"a": 1}}
    assert {(r.event, r.request_id) for r in queue.requests[1:]} == {("reapply", request_id)}
    other = {**V, "X-Request-ID": rid()}
    assert client.post(url, json={"inventory": {}}, headers=other).status_code == 409
