"""POST /v1/continue: lookup, durable storage, enqueue, ramdisk errors, hardening."""

import copy
import json
import logging

import pytest

from inspector.api import guard as guard_module
from inspector.machine import State
from tests import fixtures
from tests.api_steps import move

IPA = fixtures.load(fixtures.IPA)
IPA_ERROR = fixtures.load(fixtures.IPA_DMIDECODE_ERROR)
FOUR_NICS = fixtures.load(fixtures.FOUR_NIC)


def waiting_node(client, ironic, store, attributes):
    node = ironic.add_node()
    assert client.post(f"/v1/introspection/{node.uuid}").status_code == 202
    move(store, node.uuid, "wait", State.WAITING, request_id=f"{node.uuid}-wait")
    store.set_attributes(node.uuid, attributes)
    return node


def macs(payload):
    return [i["mac_address"] for i in payload["inventory"]["interfaces"]]


def test_real_ipa_payload_is_stored_and_enqueued(client, ironic, store, queue):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA)})
    payload = dict(IPA, logs="H4sIAAAA")
    response = client.post("/v1/continue", json=payload)
    assert response.status_code == 200
    assert response.json == {"uuid": node.uuid}
    stored = store.get_data(node.uuid, processed=False)
    assert stored["inventory"] == IPA["inventory"]
    assert "logs" not in stored
    request = queue.requests[-1]
    assert (request.node_uuid, request.event) == (node.uuid, "continue")
    assert store.get_node(node.uuid).state == State.WAITING  # the worker applies continue


def test_any_content_type_is_parsed_as_json(client, ironic, store):
    node = waiting_node(client, ironic, store, {"mac": macs(FOUR_NICS)})
    response = client.post("/v1/continue", data=json.dumps(FOUR_NICS), content_type="text/plain")
    assert response.status_code == 200
    assert response.json["uuid"] == node.uuid


def test_public_without_credentials(client, ironic, store, conf):
    # No auth header at all; the route is public whatever the strategy.
    node = waiting_node(client, ironic, store, {"mac": macs(FOUR_NICS)})
    assert client.post("/v1/continue", json=FOUR_NICS).json["uuid"] == node.uuid


def test_boot_interface_in_pxe_form_finds_the_node(client, ironic, store):
    node = waiting_node(client, ironic, store, {"mac": ["52:54:00:12:34:56"]})
    payload = {"inventory": {"interfaces": []}, "boot_interface": "01-52-54-00-12-34-56"}
    assert client.post("/v1/continue", json=payload).json["uuid"] == node.uuid


def test_most_matches_wins(client, ironic, store):
    four = macs(FOUR_NICS)
    winner = waiting_node(client, ironic, store, {"mac": four[:3]})
    waiting_node(client, ironic, store, {"mac": four[3:]})
    assert client.post("/v1/continue", json=FOUR_NICS).json["uuid"] == winner.uuid


def test_bmc_address_counts(client, ironic, store):
    payload = copy.deepcopy(FOUR_NICS)
    payload["inventory"]["bmc_address"] = "192.0.2.10"
    four = macs(FOUR_NICS)
    a = waiting_node(client, ironic, store, {"mac": four[:1], "bmc_address": ["192.0.2.10"]})
    waiting_node(client, ironic, store, {"mac": four[1:2]})
    assert client.post("/v1/continue", json=payload).json["uuid"] == a.uuid


def test_tie_is_404_naming_both(client, ironic, store):
    four = macs(FOUR_NICS)
    a = waiting_node(client, ironic, store, {"mac": four[:1]})
    b = waiting_node(client, ironic, store, {"mac": four[1:2]})
    response = client.post("/v1/continue", json=FOUR_NICS)
    assert response.status_code == 404
    message = response.json["error"]["message"]
    assert a.uuid in message and b.uuid in message


def refusals(caplog):
    """The API's lines about refused ramdisk data (a library thread of an earlier test
    may still log a "Connection refused" of its own)."""
    return [
        r
        for r in caplog.records
        if r.name == "inspector.api.ramdisk" and "refused" in r.getMessage()
    ]


def test_unknown_node_is_404(client, caplog):
    response = client.post("/v1/continue", json=FOUR_NICS)
    assert response.status_code == 404
    # A refused ramdisk will not post again: its introspection would time out unseen.
    [record] = refusals(caplog)
    assert record.levelname == "WARNING"
    assert (
        "(HTTP 404): The following failures happened during running pre-processing hooks: "
        "Look up error: Could not find a node for attributes" in record.getMessage()
    )


def test_node_not_waiting_is_404(client, ironic, store):
    node = waiting_node(client, ironic, store, {"mac": macs(FOUR_NICS)})
    assert client.post(f"/v1/introspection/{node.uuid}/abort").status_code == 202
    response = client.post("/v1/continue", json=FOUR_NICS)
    assert response.status_code == 404
    finished_at = store.get_node(node.uuid).finished_at.replace(tzinfo=None)
    assert response.json["error"]["message"] == (
        "The following failures happened during running pre-processing hooks:\n"
        f"Look up error: Introspection for node {node.uuid} already finished on {finished_at}"
    )


def test_ramdisk_error_moves_the_node_to_error_at_once(client, ironic, store, queue):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA_ERROR)})
    response = client.post("/v1/continue", json=IPA_ERROR)
    assert response.status_code == 400
    assert "dmidecode" in response.json["error"]["message"]
    recorded = store.get_node(node.uuid)
    assert recorded.state == State.ERROR
    assert recorded.error.startswith("Ramdisk reported error: ")
    assert "dmidecode" in recorded.error
    assert queue.events()[-1] == (node.uuid, "error")
    assert store.get_data(node.uuid, processed=False)["error"] == IPA_ERROR["error"]


@pytest.mark.parametrize(
    ("body", "content_type", "fragment"),
    [
        (b"", "application/json", "required"),
        (b"{not json", "application/json", "Malformed"),
        (b"[1, 2]", "application/json", "object"),
        (b'{"inventory": []}', "application/json", "inventory"),
        (b'{"inventory": {"interfaces": {}}}', "application/json", "interfaces"),
        (b'{"inventory": {"interfaces": []}}', "application/json", "MAC"),
        (b"\xff\xfe", "application/json", "Malformed"),
    ],
)
def test_bad_bodies_are_400(client, body, content_type, fragment):
    response = client.post("/v1/continue", data=body, content_type=content_type)
    assert response.status_code == 400
    assert fragment in response.json["error"]["message"]


def test_too_large_is_413(client, conf):
    conf.set_override("max_continue_body_size", 2048, group="api")
    response = client.post("/v1/continue", data=b"{" + b" " * 4096 + b"}")
    assert response.status_code == 413


def test_large_payload_within_the_continue_limit_is_accepted(client, ironic, store):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA)})
    payload = dict(IPA, logs="A" * (2 * 1024 * 1024))  # bigger than other routes accept
    assert client.post("/v1/continue", json=payload).json["uuid"] == node.uuid


def test_allowed_networks(conf, store, queue, ironic):
    from inspector.api import app as app_factory  # noqa: PLC0415

    conf.set_override("continue_allowed_networks", ["10.0.0.0/8"], group="api")
    client = app_factory.create_app(conf, store=store, queue=queue, ironic=ironic).test_client()
    response = client.post(
        "/v1/continue", json=FOUR_NICS, environ_base={"REMOTE_ADDR": "192.0.2.1"}
    )
    assert response.status_code == 403
    response = client.post("/v1/continue", json=FOUR_NICS, environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert response.status_code == 404  # let in, then no node


def test_rate_limit_per_source():
    now = [0.0]
    door = guard_module.Guard([], per_minute=3, clock=lambda: now[0])
    for _ in range(3):
        door.check("192.0.2.1")
    with pytest.raises(Exception, match="Too many") as info:
        door.check("192.0.2.1")
    assert info.value.http_status == 429
    assert info.value.retry_after == 20  # one token back every 20 s at 3 per minute
    door.check("192.0.2.2")  # another source has its own budget
    now[0] += 15.0
    with pytest.raises(Exception, match="Too many") as info:
        door.check("192.0.2.1")
    assert info.value.retry_after == 5  # the 20 s a token takes, 15 of them gone
    now[0] += 5.0
    door.check("192.0.2.1")


def test_rate_limit_through_the_api(conf, store, queue, ironic, caplog):
    caplog.set_level(logging.DEBUG, logger="inspector.api.ramdisk")
    from inspector.api import app as app_factory  # noqa: PLC0415

    conf.set_override("continue_rate_limit", 2, group="api")
    client = app_factory.create_app(conf, store=store, queue=queue, ironic=ironic).test_client()
    codes = [client.post("/v1/continue", json=FOUR_NICS).status_code for _ in range(3)]
    assert codes == [404, 404, 429]
    assert [r.levelname for r in refusals(caplog)] == ["WARNING", "WARNING", "DEBUG"]
    refused = client.post("/v1/continue", json=FOUR_NICS)
    assert refused.status_code == 429
    # A token every 30 s at 2 per minute: the wait is at most that, and never 0.
    assert 1 <= int(refused.headers["Retry-After"]) <= 30
    assert refused.json["error"]["message"].startswith("Too many /v1/continue requests")


def test_logs_never_reach_the_log(client, ironic, store, caplog):
    waiting_node(client, ironic, store, {"mac": macs(IPA)})
    secret = "U0VDUkVUTE9HUw=="
    client.post("/v1/continue", json=dict(IPA, logs=secret))
    assert secret not in caplog.text


def test_unknown_node_is_enrolled_when_discovery_is_on(client, conf, store, queue):
    conf.set_override("node_not_found_hook", "enroll", group="processing")
    response = client.post("/v1/continue", json=FOUR_NICS)
    assert response.status_code == 200
    new_uuid = response.json["uuid"]
    node = store.get_node(new_uuid)
    assert node.state == State.ENROLLING
    assert store.get_data(new_uuid, processed=False)["inventory"] == FOUR_NICS["inventory"]
    assert queue.events() == [(new_uuid, "enroll")]


def test_tie_is_not_enrolled(client, ironic, store, conf):
    conf.set_override("node_not_found_hook", "enroll", group="processing")
    four = macs(FOUR_NICS)
    waiting_node(client, ironic, store, {"mac": four[:1]})
    waiting_node(client, ironic, store, {"mac": four[1:2]})
    assert client.post("/v1/continue", json=FOUR_NICS).status_code == 404


def test_ramdisk_logs_are_written_on_error(client, ironic, store, conf, tmp_path):
    import base64  # noqa: PLC0415

    logs_dir = tmp_path / "ramdisk-logs"
    conf.set_override("ramdisk_logs_dir", str(logs_dir), group="processing")
    node = waiting_node(client, ironic, store, {"mac": macs(IPA_ERROR)})
    content = b"\x1f\x8b fake tar.gz"
    payload = dict(IPA_ERROR, logs=base64.b64encode(content).decode())
    assert client.post("/v1/continue", json=payload).status_code == 400
    files = list(logs_dir.iterdir())
    assert len(files) == 1
    assert files[0].name.startswith(f"{node.uuid}_") and files[0].name.endswith(".tar.gz")
    assert files[0].read_bytes() == content
    assert "logs" not in store.get_data(node.uuid, processed=False)


def test_ramdisk_logs_only_on_error_unless_always(client, ironic, store, conf, tmp_path):
    import base64  # noqa: PLC0415

    logs_dir = tmp_path / "ramdisk-logs"
    conf.set_override("ramdisk_logs_dir", str(logs_dir), group="processing")
    waiting_node(client, ironic, store, {"mac": macs(IPA)})
    logs = base64.b64encode(b"content").decode()
    client.post("/v1/continue", json=dict(IPA, logs=logs))
    assert not logs_dir.exists() or not list(logs_dir.iterdir())
    conf.set_override("always_store_ramdisk_logs", True, group="processing")
    client.post("/v1/continue", json=dict(IPA, logs=logs))
    assert len(list(logs_dir.iterdir())) == 1


def test_nul_characters_are_400_not_a_database_error(client):
    body = b'{"inventory": {"bmc_address": "1.2.3.4\\u0000"}}'
    response = client.post("/v1/continue", data=body)
    assert response.status_code == 400
    assert "NUL" in response.json["error"]["message"]
