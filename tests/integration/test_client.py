"""python-ironic-inspector-client (the real client, 5.4.0) against real processes.

One `inspector api` and one `inspector worker` on PostgreSQL, RabbitMQ and Redis, nodes in
the real Ironic, the real ironic-python-agent payloads posted to /v1/continue. Every
`ClientV1` method runs at API version 1.0 (the client's default) and 1.18 (the newest).

The processes serve the whole module (starting them takes seconds); each test enrolls its
own nodes, and listings are checked against what the server lists, not against a count.
"""

import json
import time
import uuid

import ironic_inspector_client
import pytest
import requests
from ironic_inspector_client import ClientError, ClientV1, VersionNotSupported

from tests.integration.cluster import (
    IPA_ERROR_PAYLOAD,
    ipa_payload,
    running_deployment,
    wait_for,
)

pytestmark = pytest.mark.integration

VERSIONS = ["1.0", "1.18"]
#: Seconds a node gets to reach a state (the worker takes it there in well under one).
STATE_TIMEOUT = 30.0
#: wait_for_finish: polls this far apart, at most this many times (30 s).
RETRY_INTERVAL = 0.1
MAX_RETRIES = 300


@pytest.fixture(scope="module")
def deployment(tmp_path_factory, postgresql_admin, rabbitmq_server, redis_server, ironic_url):
    with running_deployment(
        tmp_path_factory.mktemp("client"),
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
    ) as cluster:
        yield cluster


@pytest.fixture(params=VERSIONS)
def api_version(request):
    return request.param


@pytest.fixture
def client(deployment, api_version):
    deployment.check_alive()
    return ClientV1(inspector_url=deployment.url, api_version=api_version)


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def wait_state(client, deployment, node, state):
    def reached():
        status = client.get_status(node)
        return status if status["state"] == state else None

    return wait_for(
        reached,
        STATE_TIMEOUT,
        message=lambda: (
            f"node {node} in {state} (now {client.get_status(node)})\n" + deployment.logs()
        ),
    )


def wait_finish(client, node):
    finished = client.wait_for_finish(
        [node], retry_interval=RETRY_INTERVAL, max_retries=MAX_RETRIES
    )
    return finished[node]


def ports(ironic_api, node):
    return [port["address"] for port in ironic_api.node_ports(node)]


def post_continue(deployment, payload):
    """What ironic-python-agent does: POST the JSON to the inspection callback URL."""
    return requests.post(
        f"{deployment.url}/v1/continue",
        data=json.dumps(payload),
        headers={"Content-Type": "application/json"},
        timeout=10,
    )


def introspect_to_waiting(client, deployment, ironic_api, **kwargs):
    node = ironic_api.enroll()
    client.introspect(node["uuid"], **kwargs)
    wait_state(client, deployment, node["uuid"], "waiting")
    return node


def introspect_to_finished(client, deployment, ironic_api):
    node = introspect_to_waiting(client, deployment, ironic_api)
    payload = ipa_payload(ports(ironic_api, node["uuid"]))
    answer = post_continue(deployment, payload)
    assert answer.status_code == 200, answer.text
    status = wait_finish(client, node["uuid"])
    assert status["state"] == "finished", status
    return node, payload


# ---------------------------------------------------------------- versions


def test_server_versions_and_client_side_checks(deployment):
    client = ClientV1(inspector_url=deployment.url)
    assert client.server_api_versions() == ((1, 0), (1, 19))
    # Without api_version the client asks for 1.0, on every request.
    answer = client.request("get", "/introspection")
    assert answer.headers["X-OpenStack-Ironic-Inspector-API-Version"] == "1.0"
    assert ironic_inspector_client.DEFAULT_API_VERSION == (1, 0)
    for too_new in ((1, 20), "1.20", 2, (2, 0)):
        with pytest.raises(VersionNotSupported) as raised:
            ClientV1(inspector_url=deployment.url, api_version=too_new)
        assert raised.value.supported_versions == ((1, 0), (1, 19))
    # "latest" is the server's word, not the client's: refused before any request.
    with pytest.raises(ValueError, match="Malformed API version"):
        ClientV1(inspector_url=deployment.url, api_version="latest")
    # The URL may already end in /v1.
    assert ClientV1(inspector_url=deployment.url + "/v1").list_statuses(limit=1) is not None


def test_every_request_carries_the_version(client, api_version):
    answer = client.request("get", "/introspection", params={"limit": 1})
    assert answer.headers["X-OpenStack-Ironic-Inspector-API-Version"] == api_version
    assert answer.headers["X-OpenStack-Ironic-Inspector-API-Minimum-Version"] == "1.0"
    assert answer.headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"


# ---------------------------------------------------------------- introspection


def test_full_flow(client, deployment, ironic_api, api_version):
    node = ironic_api.enroll()
    uuid_ = node["uuid"]
    with pytest.raises(ClientError) as raised:
        client.get_status(uuid_)
    assert raised.value.response.status_code == 404
    client.introspect(uuid_)
    # The API committed the start: a read right after the 202 shows it, never a 404.
    first = client.get_status(uuid_)
    assert first["state"] in ("starting", "waiting"), first
    assert first["finished"] is False
    assert first["error"] is None
    assert first["finished_at"] is None
    waiting = wait_state(client, deployment, uuid_, "waiting")
    assert waiting["uuid"] == uuid_
    assert waiting["started_at"] == first["started_at"]
    assert waiting["links"][0]["href"] == f"{deployment.url}/v1/introspection/{uuid_}"
    # Boot is managed by default: the worker powered the node on in Ironic.
    ironic_api.wait_for(uuid_, lambda n: n["power_state"] == "power on")
    # Reads by Ironic name give the same status.
    assert client.get_status(node["name"]) == client.get_status(uuid_)

    payload = ipa_payload(ports(ironic_api, uuid_))
    answer = post_continue(deployment, payload)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"uuid": uuid_}

    status = wait_finish(client, uuid_)
    assert status["state"] == "finished"
    assert status["finished"] is True
    assert status["error"] is None
    assert status["finished_at"] >= status["started_at"]
    # Processing powers the node off (power_off defaults to true).
    ironic_api.wait_for(uuid_, lambda n: n["power_state"] == "power off")

    data = client.get_data(uuid_)
    assert data["inventory"]["interfaces"] == payload["inventory"]["interfaces"]
    assert data["inventory"]["cpu"] == payload["inventory"]["cpu"]
    raw = client.get_data(uuid_, raw=True)
    assert isinstance(raw, bytes)
    assert json.loads(raw) == data
    assert client.get_data(node["name"]) == data
    # The client's interface views read `all_interfaces`, which the validate_interfaces
    # hook adds to the processed data; before the hooks run, the client says so.
    interface = payload["inventory"]["interfaces"][0]
    fields = ["node_ident", "interface", "mac", "switch_port_vlan_ids"]
    if "all_interfaces" in data:
        assert client.get_interface_data(uuid_, interface["name"], fields) == {
            "node_ident": uuid_,
            "interface": interface["name"],
            "mac": interface["mac_address"],
            "switch_port_vlan_ids": [],
        }
        rows = client.get_all_interface_data(uuid_, ["interface", "mac"])
        assert rows == [[interface["name"], interface["mac_address"]]]
    else:
        with pytest.raises(ValueError, match="not found"):
            client.get_interface_data(uuid_, interface["name"], fields)
        assert client.get_all_interface_data(uuid_, ["interface", "mac"]) == []
    with pytest.raises(ValueError, match="not found"):
        client.get_interface_data(uuid_, "no-such-nic", fields)
    # GET .../data/unprocessed came with 1.17, but is served at any version: the
    # openstack CLI plugin asks for it at 1.0.
    assert client.get_data(uuid_, processed=False) == payload
    assert json.loads(client.get_data(uuid_, raw=True, processed=False)) == payload

    # A second start from finished begins a new run.
    client.introspect(uuid_)
    again = client.get_status(uuid_)
    assert again["state"] in ("starting", "waiting"), again
    assert again["started_at"] > status["started_at"]
    wait_state(client, deployment, uuid_, "waiting")
    client.abort(uuid_)


def test_manage_boot(client, deployment, ironic_api):
    unmanaged = ironic_api.enroll()
    ironic_api.request("PUT", f"/nodes/{unmanaged['uuid']}/states/power", {"target": "power off"})
    ironic_api.wait_for(unmanaged["uuid"], lambda n: n["power_state"] == "power off")
    client.introspect(unmanaged["uuid"], manage_boot=False)
    wait_state(client, deployment, unmanaged["uuid"], "waiting")
    managed = introspect_to_waiting(client, deployment, ironic_api, manage_boot=True)
    ironic_api.wait_for(managed["uuid"], lambda n: n["power_state"] == "power on")
    # The unmanaged node was left alone: Ironic (or someone) boots it.
    assert ironic_api.get_node(unmanaged["uuid"])["power_state"] == "power off"

    payload = ipa_payload(ports(ironic_api, unmanaged["uuid"]))
    assert post_continue(deployment, payload).status_code == 200
    status = wait_finish(client, unmanaged["uuid"])
    assert status["state"] == "finished", status
    assert ironic_api.get_node(unmanaged["uuid"])["power_state"] == "power off"
    client.abort(managed["uuid"])

    unknown = str(uuid.uuid4())
    with pytest.raises(ClientError) as raised:
        client.introspect(unknown)
    assert raised.value.response.status_code == 404
    assert str(raised.value) == f"Node {unknown} was not found in Ironic"  # ironic-inspector's
    with pytest.raises(TypeError):
        client.introspect(None)


def test_abort_while_waiting(client, deployment, ironic_api):
    node = introspect_to_waiting(client, deployment, ironic_api)
    assert client.abort(node["uuid"]).status_code == 202
    status = client.get_status(node["uuid"])
    assert status["state"] == "error"
    assert status["finished"] is True
    assert status["error"] == "Canceled by operator"
    assert status["finished_at"] is not None
    assert wait_finish(client, node["uuid"]) == status
    # The ramdisk comes too late: nothing waits for it any more.
    late = post_continue(deployment, ipa_payload(ports(ironic_api, node["uuid"])))
    assert late.status_code == 404, late.text
    # Nothing left to abort: an honest 400 (ironic-inspector answered 202).
    with pytest.raises(ClientError) as raised:
        client.abort(node["uuid"])
    assert raised.value.response.status_code == 400
    with pytest.raises(ClientError) as raised:
        client.abort(str(uuid.uuid4()))
    assert raised.value.response.status_code == 404
    assert client.get_status(node["uuid"]) == status


def test_reprocess_a_finished_node(client, deployment, ironic_api):
    node, payload = introspect_to_finished(client, deployment, ironic_api)
    before = client.get_status(node["uuid"])
    assert client.reprocess(node["uuid"]).status_code == 202
    # The API committed the reapply: the old `finished` is never read back.
    right_after = client.get_status(node["uuid"])
    assert right_after["state"] in ("reapplying", "finished"), right_after
    after = wait_finish(client, node["uuid"])
    assert after["state"] == "finished", after
    assert after["error"] is None
    assert after["finished_at"] >= before["finished_at"]
    data = client.get_data(node["uuid"])
    assert data["inventory"]["interfaces"] == payload["inventory"]["interfaces"]

    # While the node waits for its ramdisk, reprocessing is refused as busy.
    waiting = introspect_to_waiting(client, deployment, ironic_api)
    with pytest.raises(ClientError) as raised:
        client.reprocess(waiting["uuid"])
    assert raised.value.response.status_code == 409
    assert str(raised.value) == (
        f"Cannot reapply node {waiting['uuid']}: its introspection is not finished (state waiting)"
    )
    client.abort(waiting["uuid"])
    unknown = str(uuid.uuid4())
    with pytest.raises(ClientError) as raised:
        client.reprocess(unknown)
    assert raised.value.response.status_code == 404
    # ironic-inspector's words (it reads the raw data first)
    assert str(raised.value) == f"Introspection data not found for node {unknown}, processed=False"


def test_ramdisk_error_ends_in_error_with_its_message(client, deployment, ironic_api):
    node = introspect_to_waiting(client, deployment, ironic_api)
    payload = ipa_payload(ports(ironic_api, node["uuid"]), IPA_ERROR_PAYLOAD)
    answer = post_continue(deployment, payload)
    # 400 for the ramdisk (it must not retry), and the node fails at once.
    assert answer.status_code == 400, answer.text
    assert "failed to run dmidecode" in answer.json()["error"]["message"]
    status = client.get_status(node["uuid"])
    assert status["state"] == "error", status
    assert status["finished"] is True
    assert status["error"] == f"Ramdisk reported error: {payload['error']}"
    assert wait_finish(client, node["uuid"]) == status
    with pytest.raises(ClientError) as raised:
        client.get_data(node["uuid"])
    assert raised.value.response.status_code == 404


def test_list_statuses_with_paging(client, deployment, ironic_api):
    nodes = []
    for _ in range(3):
        node = ironic_api.enroll()
        client.introspect(node["uuid"], manage_boot=False)
        nodes.append(node["uuid"])
        time.sleep(0.01)  # distinct started_at, so the order is the start order
    for node in nodes:  # settled: the listings below must not race the worker
        wait_state(client, deployment, node, "waiting")
    everything = client.list_statuses()
    listed = [status["uuid"] for status in everything]
    ours = [uuid_ for uuid_ in listed if uuid_ in nodes]
    assert ours == list(reversed(nodes)), "newest first"
    starts = [status["started_at"] for status in everything]
    assert starts == sorted(starts, reverse=True)

    assert client.list_statuses(limit=2) == everything[:2]
    # Walking the pages gives the whole listing, in order, once.
    pages, marker = [], None
    while True:
        page = client.list_statuses(marker=marker, limit=2)
        if not page:
            break
        assert len(page) <= 2
        pages.extend(page)
        marker = page[-1]["uuid"]
    assert [s["uuid"] for s in pages] == listed
    position = listed.index(nodes[2])
    assert client.list_statuses(marker=nodes[2], limit=1)[0]["uuid"] == listed[position + 1]
    # limit 0 means the server's maximum.
    assert [s["uuid"] for s in client.list_statuses(limit=0)] == listed

    with pytest.raises(ClientError) as raised:
        client.list_statuses(marker="not-a-uuid")
    assert raised.value.response.status_code == 400
    with pytest.raises(ClientError) as raised:
        client.list_statuses(limit=-1)
    assert raised.value.response.status_code == 400
    with pytest.raises(TypeError):
        client.list_statuses(limit="2")
    for node in nodes:
        client.abort(node)


# ---------------------------------------------------------------- rules

RULE = {
    "description": "large memory",
    "conditions": [{"op": "ge", "field": "memory_mb", "value": 1024}],
    "actions": [{"action": "set-capability", "name": "large", "value": "true"}],
}


def test_rules(client, deployment, api_version):
    client.rules.delete_all()
    assert client.rules.get_all() == []

    rule_uuid = str(uuid.uuid4())
    created = client.rules.create(
        conditions=RULE["conditions"],
        actions=RULE["actions"],
        uuid=rule_uuid,
        description=RULE["description"],
    )
    assert created["uuid"] == rule_uuid
    assert created["description"] == RULE["description"]
    assert created["actions"] == RULE["actions"]
    assert created["conditions"][0]["op"] == "ge"
    assert created["conditions"][0]["field"] == "memory_mb"
    assert created["links"][0]["href"] == f"/v1/rules/{rule_uuid}"  # a path, as upstream's
    assert client.rules.get(rule_uuid) == created

    imported = client.rules.from_json({**RULE, "description": "imported"})
    assert imported["description"] == "imported"
    assert uuid.UUID(imported["uuid"])
    summaries = client.rules.get_all()
    assert {r["uuid"] for r in summaries} == {rule_uuid, imported["uuid"]}
    for summary in summaries:
        assert summary["links"][0]["href"].endswith(f"/v1/rules/{summary['uuid']}")
        assert "description" in summary

    # POST /v1/rules answered 200 before 1.6, 201 since.
    answer = client.request("post", "/rules", json=RULE)
    assert answer.status_code == (201 if version_tuple(api_version) >= (1, 6) else 200)

    with pytest.raises(ClientError) as raised:
        client.rules.create(conditions=[], actions=RULE["actions"], uuid=rule_uuid)
    assert raised.value.response.status_code == 409
    with pytest.raises(ClientError) as raised:
        client.rules.from_json({"conditions": [], "actions": []})
    assert raised.value.response.status_code == 400
    assert "action" in str(raised.value)
    with pytest.raises(TypeError):
        client.rules.create(conditions={}, actions=RULE["actions"])

    client.rules.delete(rule_uuid)
    with pytest.raises(ClientError) as raised:
        client.rules.get(rule_uuid)
    assert raised.value.response.status_code == 404
    with pytest.raises(ClientError) as raised:
        client.rules.delete(rule_uuid)
    assert raised.value.response.status_code == 404
    assert rule_uuid not in {r["uuid"] for r in client.rules.get_all()}

    client.rules.delete_all()
    assert client.rules.get_all() == []
