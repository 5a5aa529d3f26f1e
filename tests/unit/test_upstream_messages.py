"""The API's refusals read as ironic-inspector 12.5's where it refuses the same request:
clients and scripts match on the messages. One row per situation: the request, the
status and the exact message, with the ironic-inspector function that words it."""

# ruff: noqa: E501 - the tables keep each message on its row, whole, to be read and grepped

import copy
import uuid

import pytest

from inspector.api import intents
from inspector.errors import NodeBusy
from inspector.machine import State
from tests import fixtures
from tests.api_steps import V, move, start

FOUR_NICS = fixtures.load(fixtures.FOUR_NIC)
FAILURES = "The following failures happened during running pre-processing hooks:\n"
VALID_STATES = "['enroll', 'manageable', 'inspecting', 'inspect wait', 'inspect failed']"
RULE = {"actions": [{"action": "add-trait", "name": "CUSTOM_X"}]}


@pytest.fixture
def node(ironic, conf):
    conf.set_override("store_data", "database", group="processing")
    return ironic.add_node(name="node-1", provision_state="manageable")


def to(store, node_uuid: str, *steps: tuple[str, State]) -> None:
    for event, target in steps:
        move(store, node_uuid, event, target)


WAITING = (("wait", State.WAITING),)
PROCESSING = (*WAITING, ("continue", State.PROCESSING))
FINISHED = (*PROCESSING, ("finish", State.FINISHED))


def answer(response) -> tuple[int, str]:
    return response.status_code, response.json["error"]["message"]


# (what, the request after the node was started and moved through `steps`, status,
# message; "{uuid}" stands for the node's UUID)
INTROSPECTION = [
    # db.api.get_introspection_data, through main._get_data
    ("GET", "/data", FINISHED, 404, "Introspection data not found for node {uuid}, processed=True"),
    ("GET", "/data/unprocessed", FINISHED, 404, "Introspection data not found for node {uuid}, processed=False"),
    # conductor.manager.do_reapply: it reads the raw data first
    ("POST", "/data/unprocessed", FINISHED, 404, "Introspection data not found for node {uuid}, processed=False"),
    # process.reapply: the node lock is held while processing
    ("POST", "/data/unprocessed", PROCESSING, 409, "Node locked, please, try again later"),
    ("POST", "/data/unprocessed", (), 409, "Node locked, please, try again later"),
    # introspect.abort: the node lock is held while starting and processing
    ("POST", "/abort", (), 409, "Node is locked, please, retry later"),
    ("POST", "/abort", PROCESSING, 409, "Node is locked, please, retry later"),
    # node_cache.start_introspection: automaton's NotFound for the start event
    ("POST", "", PROCESSING, 409, "Can not transition from state 'processing' on event 'start' (no defined transition)"),
    # ours (ironic-inspector has no message: it restarts a waiting node, and reapplies
    # on it in the background, to fail there)
    ("POST", "", WAITING, 409, "Cannot start introspection of node {uuid}: its introspection is not finished (state waiting)"),
    ("POST", "/data/unprocessed", WAITING, 409, "Cannot reapply node {uuid}: its introspection is not finished (state waiting)"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "steps", "status", "message"), INTROSPECTION)
def test_introspection_refusals(client, node, store, method, path, steps, status, message):
    assert start(client, node.uuid).status_code == 202
    to(store, node.uuid, *steps)
    response = client.open(f"/v1/introspection/{node.uuid}{path}", method=method, headers=V)
    assert answer(response) == (status, message.format(uuid=node.uuid))


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", ""), ("POST", "/abort"), ("GET", "/data"), ("POST", "/data/unprocessed")],
)
def test_a_node_without_introspection(client, node, method, path):
    response = client.open(f"/v1/introspection/{node.uuid}{path}", method=method, headers=V)
    if path.startswith("/data"):
        # db.api.get_introspection_data (conductor.manager.do_reapply reads the data
        # before the node)
        processed = method == "GET"
        expected = f"Introspection data not found for node {node.uuid}, processed={processed}"
    else:
        expected = f"Could not find node {node.uuid} in cache"  # node_cache.get_node
    assert answer(response) == (404, expected)


def test_data_when_nothing_is_stored(client, node, conf):
    conf.set_override("store_data", "none", group="processing")
    response = client.get(f"/v1/introspection/{node.uuid}/data", headers=V)
    # main._get_data
    assert answer(response) == (
        404,
        "Inspector is not configured to store data. "
        "Set the [processing]store_data configuration option to change this.",
    )


def test_a_node_ironic_has_not(client):
    unknown = str(uuid.uuid4())
    # common.ironic.get_node (its NotFound), through introspect.introspect
    assert answer(start(client, unknown)) == (404, f"Node {unknown} was not found in Ironic")
    assert answer(start(client, "no-such-node")) == (
        404,
        "Node no-such-node was not found in Ironic",
    )


def test_provision_state(client, ironic):
    node = ironic.add_node(provision_state="active")
    # common.ironic.check_provision_state
    assert answer(start(client, node.uuid)) == (
        400,
        f'Invalid provision state for introspection: "active", valid states are "{VALID_STATES}"',
    )


@pytest.mark.parametrize(
    ("path", "query", "message"),
    [
        # main.api_introspection
        ("/v1/introspection/{uuid}", "manage_boot=maybe", "Invalid boolean value for manage_boot: maybe"),
        # api_tools.limit_field, marker_field, state_field
        ("/v1/introspection", "limit=-1", "Bad request: Limit cannot be negative"),
        ("/v1/introspection", "limit=1001", "Bad request: Limit over 1000"),
        ("/v1/introspection", "limit=x", "Bad request: invalid literal for int() with base 10: 'x'"),
        ("/v1/introspection", "marker=abc", "Bad request: Marker not UUID-like"),
        ("/v1/introspection", "state=bogus,waiting,nope", 'Bad request: State(s) "bogus, nope" are not valid'),
    ],
)  # fmt: skip
def test_parameters(client, node, path, query, message):
    method = "POST" if "{uuid}" in path else "GET"
    url = path.format(uuid=node.uuid)
    response = client.open(url, method=method, query_string=query, headers=V)
    assert answer(response) == (400, message)


@pytest.mark.parametrize(
    ("version", "status", "message"),
    [
        # main._get_version
        ("1.x", 400, "Malformed API version: expected string in form of X.Y or latest"),
        ("1" * 40, 400, "Malformed API version: expected string in form of X.Y or latest"),
        # main.check_api_version, its words with our range (Inspector's own 1.19 in it)
        ("2.0", 406, "Unsupported API version 2.0, supported range is 1.0 to 1.19"),
        ("1.020", 406, "Unsupported API version 1.20, supported range is 1.0 to 1.19"),
    ],
)
def test_api_versions(client, version, status, message):
    headers = {"X-OpenStack-Ironic-Inspector-API-Version": version}
    assert answer(client.get("/v1/introspection", headers=headers)) == (status, message)


@pytest.mark.parametrize(
    ("body", "kind"), [("[1]", "list"), ('"x"', "str"), ("null", "NoneType"), ("3", "int")]
)
def test_a_body_that_is_no_object(client, body, kind):
    # main.api_continue
    response = client.post("/v1/continue", data=body, content_type="application/json")
    assert answer(response) == (400, f"Invalid data: expected a JSON object, got {kind}")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # main.api_rules
        ({"uuid": "not-a-uuid"}, "Invalid UUID value"),
        ({"scope": "s" * 256}, "Invalid scope: the length of the scope should be within 255 characters"),
        # rules._validate_conditions, with plugins.base.WithValidation.validate
        ({"conditions": [{"op": "eq", "field": "x"}]}, "Invalid parameters for operator eq: missing required parameter(s): value"),
        ({"conditions": [{"op": "eq", "field": "port://x", "value": 1}]}, "Unsupported scheme for field: port, valid values are node:// or data://"),
        # rules._validate_actions, with plugins.base.WithValidation.validate
        ({"actions": [{"action": "fail"}]}, "Invalid parameters for action fail: missing required parameter(s): message"),
        ({"actions": [{"action": "add-trait", "name": "X", "note": 1}]}, "Invalid parameters for action add-trait: unexpected parameter(s): note"),
    ],
)  # fmt: skip
def test_rule_refusals(client, change, message):
    response = client.post("/v1/rules", json={**RULE, **change}, headers=V)
    assert answer(response) == (400, message)


def test_rule_headings(client):
    # rules._validate_conditions / _validate_actions open so; what follows is ours
    conditions = [{"op": "approx", "field": "x", "value": 1}]
    response = client.post("/v1/rules", json={**RULE, "conditions": conditions}, headers=V)
    assert answer(response)[1].startswith("Validation failed for conditions: conditions[0]: ")
    response = client.post("/v1/rules", json={"actions": [{"action": "explode"}]}, headers=V)
    assert answer(response)[1].startswith("Validation failed for actions: actions[0]: ")
    response = client.post("/v1/rules", json={"actions": [{"name": "x"}]}, headers=V)
    assert answer(response)[1] == (
        "Validation failed for actions: body.actions[0]: 'action' is a required property"
    )


def test_rule_uuid_taken_and_missing(client):
    rule_uuid = str(uuid.uuid4())
    assert client.post("/v1/rules", json={**RULE, "uuid": rule_uuid}, headers=V).status_code == 201
    # db.api.create_rule (utils.RuleUUIDExistError), db.api.get_rule (RuleNotFoundError)
    response = client.post("/v1/rules", json={**RULE, "uuid": rule_uuid}, headers=V)
    assert answer(response) == (409, f"Rule with UUID {rule_uuid} already exists")
    missing = str(uuid.uuid4())
    assert answer(client.get(f"/v1/rules/{missing}", headers=V)) == (
        404,
        f"Rule {missing} was not found",
    )


def waiting_node(client, ironic, store, macs):
    node = ironic.add_node()
    assert start(client, node.uuid).status_code == 202
    move(store, node.uuid, "wait", State.WAITING)
    store.set_attributes(node.uuid, {"mac": macs})
    return node


def test_continue_for_no_node(client):
    payload = {"inventory": {"interfaces": [{"mac_address": "52:54:00:00:00:01"}]}}
    payload["inventory"]["bmc_address"] = "192.0.2.1"
    # process._find_node_info, with node_cache.find_node's NotFoundInCacheError
    assert answer(client.post("/v1/continue", json=payload)) == (
        404,
        f"{FAILURES}Look up error: Could not find a node for attributes "
        "{'bmc_address': ['192.0.2.1'], 'mac': ['52:54:00:00:00:01']}",
    )


def test_continue_for_two_nodes(client, ironic, store):
    mac = [i["mac_address"] for i in FOUR_NICS["inventory"]["interfaces"]]
    a = waiting_node(client, ironic, store, mac[:1])
    b = waiting_node(client, ironic, store, mac[1:2])
    response = client.post("/v1/continue", json=FOUR_NICS)
    status, message = answer(response)
    winners = sorted([a.uuid, b.uuid])
    # process._find_node_info, with node_cache.find_node's tie
    assert status == 404
    assert message.startswith(
        f"{FAILURES}Look up error: Multiple nodes match the same number of attributes {{"
    )
    assert message.endswith(f"}}: {winners}")


def test_continue_for_a_finished_introspection(client, ironic, store):
    mac = [i["mac_address"] for i in FOUR_NICS["inventory"]["interfaces"]]
    node = waiting_node(client, ironic, store, mac)
    to(store, node.uuid, ("continue", State.PROCESSING))
    move(store, node.uuid, "finish", State.FINISHED, finished_at=store.clock())
    finished_at = store.get_node(node.uuid).finished_at.replace(tzinfo=None)
    # process._find_node_info, with node_cache.find_node's finished row
    assert answer(client.post("/v1/continue", json=FOUR_NICS)) == (
        404,
        f"{FAILURES}Look up error: Introspection for node {node.uuid} already finished on "
        f"{finished_at}",
    )


def test_continue_with_the_ramdisk_error(client, ironic, store):
    mac = [i["mac_address"] for i in FOUR_NICS["inventory"]["interfaces"]]
    waiting_node(client, ironic, store, mac)
    payload = copy.deepcopy(FOUR_NICS)
    payload["error"] = "no disks"
    # process.process, with the ramdisk_error hook's (plugins.standard.RamdiskErrorHook)
    assert answer(client.post("/v1/continue", json=payload)) == (
        400,
        f"{FAILURES}Preprocessing hook ramdisk_error: Ramdisk reported error: no disks",
    )


def test_a_node_changed_meanwhile_is_named_once(client, node, monkeypatch):
    def moved(*args, **kwargs):
        raise NodeBusy(f"node {node.uuid} changed under us (expected version 1)")

    monkeypatch.setattr(intents, "commit", moved)
    # ours (ironic-inspector's NodeStateRaceCondition is a 500)
    assert answer(start(client, node.uuid)) == (
        409,
        f"Node {node.uuid} changed meanwhile, try again",
    )
