"""/v1/introspection through Flask's test client: real store (SQLite), fake Ironic,
recording queue."""

import datetime
import uuid

import pytest

from inspector.machine import State
from inspector.store import Change
from tests.api_steps import V, move, start


@pytest.fixture
def node(ironic):
    return ironic.add_node(name="node-1", provision_state="manageable")


def test_start_records_starting_and_enqueues(client, node, store, queue):
    response = start(client, node.uuid)
    assert response.status_code == 202
    assert response.json == {}
    assert store.get_node(node.uuid).state == State.STARTING
    assert queue.events() == [(node.uuid, "inspect")]
    status = client.get(f"/v1/introspection/{node.uuid}", headers=V).json
    assert status["state"] == "starting"
    assert status["finished"] is False
    assert status["error"] is None
    assert status["finished_at"] is None
    assert status["started_at"]
    assert status["links"] == [
        {"rel": "self", "href": f"http://localhost/v1/introspection/{node.uuid}"}
    ]


def test_start_keeps_the_node_it_read_for_the_worker(client, node, store):
    assert start(client, node.uuid).status_code == 202
    snapshot = store.snapshot(node.uuid)
    assert snapshot.node["uuid"] == node.uuid
    assert snapshot.node["provision_state"] == "manageable"
    assert snapshot.ports is None  # the worker lists them
    assert snapshot.taken_at >= store.get_node(node.uuid).started_at


def test_start_by_name(client, node, store):
    assert start(client, "node-1").status_code == 202
    assert store.get_node(node.uuid).state == State.STARTING


def test_start_accepts_ironic_body_without_version_header(client, node):
    response = client.post(f"/v1/introspection/{node.uuid}", json={"uuid": node.uuid})
    assert response.status_code == 202


def test_restart_after_finish_shows_starting_never_finished(client, node, store):
    start(client, node.uuid)
    current = store.get_node(node.uuid)
    store.apply(
        Change(
            node_uuid=node.uuid,
            expected_version=current.version,
            request_id="x",
            event="error",
            source="starting",
            target="error",
            error="boom",
            finished_at=datetime.datetime(2026, 1, 1),
        ),
        current,
    )
    assert start(client, node.uuid).status_code == 202
    status = client.get(f"/v1/introspection/{node.uuid}", headers=V).json
    assert status["state"] == "starting"
    assert status["error"] is None and status["finished_at"] is None


def test_manage_boot_is_recorded(client, node, store):
    assert start(client, node.uuid, query_string={"manage_boot": "false"}).status_code == 202
    assert store.get_node(node.uuid).manage_boot is False


@pytest.mark.parametrize("value", ["maybe", "2", ""])
def test_bad_manage_boot_is_400(client, node, value):
    response = start(client, node.uuid, query_string={"manage_boot": value})
    assert response.status_code == 400
    assert "manage_boot" in response.json["error"]["message"]


def test_unknown_node_is_404(client):
    response = start(client, str(uuid.uuid4()))
    assert response.status_code == 404


@pytest.mark.parametrize("ident", ["bad name!", "x" * 300, "a/b"])
def test_invalid_name_is_400_or_404(client, ident):
    response = start(client, ident)
    assert response.status_code in (400, 404)
    assert "error" in response.json


@pytest.mark.parametrize("state", ["active", "deploying", "available", "clean wait"])
def test_wrong_provision_state_is_400(client, ironic, state):
    node = ironic.add_node(provision_state=state)
    response = start(client, node.uuid)
    assert response.status_code == 400
    assert "provision state" in response.json["error"]["message"]


def test_active_allowed_when_permitted(client, ironic, conf):
    conf.set_override("permit_active_introspection", True, group="processing")
    node = ironic.add_node(provision_state="active")
    assert start(client, node.uuid).status_code == 202


def test_start_while_waiting_is_409(client, node, store):
    start(client, node.uuid)
    move(store, node.uuid, "wait", State.WAITING)
    response = start(client, node.uuid)
    assert response.status_code == 409
    assert response.json["error"]["message"] == (
        f"Cannot start introspection of node {node.uuid}: its introspection is not finished "
        "(state waiting)"
    )


def test_unknown_query_parameter_is_400(client, node):
    response = start(client, node.uuid, query_string={"manage_bot": "true"})
    assert response.status_code == 400
    assert "manage_bot" in response.json["error"]["message"]


def test_malformed_body_is_400(client, node):
    response = start(client, node.uuid, data=b"{not json", content_type="application/json")
    assert response.status_code == 400


def test_status_of_unknown_node_is_404(client):
    response = client.get(f"/v1/introspection/{uuid.uuid4()}", headers=V)
    assert response.status_code == 404


def test_abort_waiting(client, node, store, queue):
    start(client, node.uuid)
    move(store, node.uuid, "wait", State.WAITING)
    response = client.post(f"/v1/introspection/{node.uuid}/abort", headers=V)
    assert response.status_code == 202
    status = client.get(f"/v1/introspection/{node.uuid}", headers=V).json
    assert status["state"] == "error"
    assert status["error"] == "Canceled by operator"
    assert status["finished"] is True
    assert queue.events()[-1] == (node.uuid, "abort")


def test_abort_busy_is_409_and_nothing_is_400(client, node, store):
    start(client, node.uuid)
    assert client.post(f"/v1/introspection/{node.uuid}/abort").status_code == 409
    move(store, node.uuid, "wait", State.WAITING)
    assert client.post(f"/v1/introspection/{node.uuid}/abort").status_code == 202
    response = client.post(f"/v1/introspection/{node.uuid}/abort")
    assert response.status_code == 400
    assert client.post(f"/v1/introspection/{uuid.uuid4()}/abort").status_code == 404


def _started(client, ironic, count):
    nodes = [ironic.add_node() for _ in range(count)]
    for node in nodes:
        assert start(client, node.uuid).status_code == 202
    return nodes


def test_list_is_newest_first_and_pages(client, ironic):
    nodes = _started(client, ironic, 5)
    listed = client.get("/v1/introspection", headers=V).json["introspection"]
    assert {s["uuid"] for s in listed} == {n.uuid for n in nodes}
    order = [(s["started_at"], s["uuid"]) for s in listed]
    assert order == sorted(order, reverse=True)
    first = client.get("/v1/introspection?limit=2").json["introspection"]
    second = client.get(f"/v1/introspection?limit=2&marker={first[-1]['uuid']}").json
    third = client.get(
        f"/v1/introspection?limit=2&marker={second['introspection'][-1]['uuid']}"
    ).json["introspection"]
    paged = [s["uuid"] for s in first + second["introspection"] + third]
    assert paged == [s["uuid"] for s in listed]


def test_list_state_filter(client, ironic, store):
    nodes = _started(client, ironic, 3)
    move(store, nodes[0].uuid, "wait", State.WAITING)
    listed = client.get("/v1/introspection?state=waiting").json["introspection"]
    assert [s["uuid"] for s in listed] == [nodes[0].uuid]
    both = client.get("/v1/introspection?state=waiting&state=starting").json["introspection"]
    assert len(both) == 3


@pytest.mark.parametrize(
    "query",
    [
        "limit=-1",
        "limit=abc",
        "limit=1001",
        "marker=nope",
        "marker=0b7e4fbe-5b1c-4bd8-9d0a-2f5a3c1e9d47",  # a UUID no node has
        "state=bogus",
        "sort=asc",
    ],
)
def test_list_bad_parameters_are_400(client, query):
    response = client.get(f"/v1/introspection?{query}")
    assert response.status_code == 400
    assert response.json["error"]["message"]


def test_limit_zero_means_the_maximum(client, ironic, conf):
    conf.set_override("api_max_limit", 2)
    _started(client, ironic, 3)
    assert len(client.get("/v1/introspection?limit=0").json["introspection"]) == 2


def test_data_endpoints(client, node, store, conf):
    start(client, node.uuid)
    assert client.get(f"/v1/introspection/{node.uuid}/data").status_code == 404
    conf.set_override("store_data", "database", group="processing")
    assert client.get(f"/v1/introspection/{node.uuid}/data").status_code == 404
    store.store_data(node.uuid, {"inventory": {"cpu": {"count": 4}}}, processed=True)
    store.store_data(node.uuid, {"raw": True}, processed=False)
    assert client.get(f"/v1/introspection/{node.uuid}/data").json["inventory"]["cpu"]["count"] == 4
    raw = client.get(f"/v1/introspection/{node.uuid}/data/unprocessed", headers=V)
    assert raw.json == {"raw": True}
    # Added in 1.17, served at any version (the openstack CLI plugin asks at 1.0).
    old = client.get(
        f"/v1/introspection/{node.uuid}/data/unprocessed",
        headers={"X-OpenStack-Ironic-Inspector-API-Version": "1.0"},
    )
    assert old.json == {"raw": True}


def test_reapply(client, node, store, queue):
    start(client, node.uuid)
    url = f"/v1/introspection/{node.uuid}/data/unprocessed"
    assert client.post(url, headers=V).status_code == 409  # busy: starting
    move(store, node.uuid, "wait", State.WAITING)
    move(store, node.uuid, "continue", State.PROCESSING)
    move(store, node.uuid, "finish", State.FINISHED)
    response = client.post(url, headers=V)
    assert response.status_code == 404  # no raw data
    assert response.json["error"]["message"] == (
        f"Introspection data not found for node {node.uuid}, processed=False"
    )
    store.store_data(node.uuid, {"inventory": {}}, processed=False)
    assert client.post(url, headers=V).status_code == 202
    assert store.get_node(node.uuid).state == State.REAPPLYING
    assert queue.events()[-1] == (node.uuid, "reapply")


def test_reapply_with_body_replaces_raw_data(client, node, store):
    start(client, node.uuid)
    for event, target in (("wait", "waiting"), ("continue", "processing"), ("finish", "finished")):
        move(store, node.uuid, event, target)
    url = f"/v1/introspection/{node.uuid}/data/unprocessed"
    old = {"X-OpenStack-Ironic-Inspector-API-Version": "1.14"}
    assert client.post(url, json={"inventory": {"new": 1}}, headers=old).status_code == 404
    assert client.post(url, json={"inventory": {"new": 1}}, headers=V).status_code == 202
    assert store.get_data(node.uuid, processed=False) == {"inventory": {"new": 1}}
    assert client.post(url, json=[1, 2], headers=V).status_code == 400


def test_reapply_body_gets_the_checks_of_ramdisk_data(client, node, store, conf):
    start(client, node.uuid)
    for event, target in (("wait", "waiting"), ("continue", "processing"), ("finish", "finished")):
        move(store, node.uuid, event, target)
    url = f"/v1/introspection/{node.uuid}/data/unprocessed"
    store.store_data(node.uuid, {"inventory": {"kept": 1}}, processed=False)
    wrong = client.post(url, json={"inventory": {"disks": {"sda": {}}}}, headers=V)
    assert wrong.status_code == 400
    assert "inventory.disks" in wrong.json["error"]["message"]
    nics = [
        {"name": f"eth{i}", "mac_address": f"02:00:00:00:{i >> 8:02x}:{i & 255:02x}"}
        for i in range(conf.limits.max_interfaces + 1)
    ]
    over = client.post(url, json={"inventory": {"interfaces": nics}}, headers=V)
    assert over.status_code == 400
    assert "max_interfaces" in over.json["error"]["message"]
    assert store.get_data(node.uuid, processed=False) == {"inventory": {"kept": 1}}


def test_ironic_down_is_503_not_500(client, ironic, node):
    ironic.fail_next(1)
    response = start(client, node.uuid)
    assert response.status_code == 503
    assert response.json["error"]["message"]


def test_queue_down_fails_the_node_visibly(client, node, store, queue):
    from inspector.errors import ServiceUnavailable  # noqa: PLC0415

    def broken(request):
        raise ServiceUnavailable("RabbitMQ is gone")

    queue.put = broken
    response = start(client, node.uuid)
    assert response.status_code == 503
    recorded = store.get_node(node.uuid)
    assert recorded.state == State.ERROR
    assert "queue is unavailable" in recorded.error


def test_too_large_body_is_413(client, node, conf):
    response = start(client, node.uuid, data=b"{" + b" " * (2 * 1024 * 1024) + b"}")
    assert response.status_code == 413
    assert response.json["error"]["message"]


def test_name_with_a_trailing_newline_is_400(client, ironic):
    ironic.add_node(name="rack1-node")
    # `$` would match before the newline: the name must be the whole value.
    response = start(client, "rack1-node%0A")
    assert response.status_code == 400
    assert "Invalid node UUID or name" in response.json["error"]["message"]
