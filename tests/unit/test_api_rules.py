"""/v1/rules: create, list, get, delete, and validation of rule documents."""

import uuid

import pytest

V = {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}

RULE = {
    "description": "big servers",
    "conditions": [
        {"op": "ge", "field": "memory_mb", "value": 1024},
        {
            "op": "in-net",
            "field": "data://inventory.bmc_address",
            "value": "10.0.0.0/8",
            "multiple": "all",
            "invert": True,
        },
    ],
    "actions": [
        {"action": "set-capability", "name": "big", "value": "yes"},
        {"action": "add-trait", "name": "CUSTOM_BIG"},
    ],
}


def test_create_get_list_delete(client):
    created = client.post("/v1/rules", json=RULE, headers=V)
    assert created.status_code == 201
    rule = created.json
    assert uuid.UUID(rule["uuid"])
    assert rule["description"] == "big servers"
    assert rule["conditions"][0] == {
        "op": "ge",
        "field": "memory_mb",
        "value": 1024,
        "multiple": "any",
        "invert": False,
    }
    assert rule["conditions"][1]["invert"] is True
    assert rule["actions"] == RULE["actions"]
    # A path, as ironic-inspector's rule links (flask.url_for) are.
    assert rule["links"] == [{"rel": "self", "href": f"/v1/rules/{rule['uuid']}"}]
    assert client.get(f"/v1/rules/{rule['uuid']}").json == rule
    listed = client.get("/v1/rules").json["rules"]
    assert listed == [
        {"uuid": rule["uuid"], "description": "big servers", "scope": None, "links": rule["links"]}
    ]
    assert client.delete(f"/v1/rules/{rule['uuid']}").status_code == 204
    assert client.get(f"/v1/rules/{rule['uuid']}").status_code == 404
    assert client.delete(f"/v1/rules/{rule['uuid']}").status_code == 404


def test_rule_links_keep_the_prefix_the_api_is_served_under(client):
    under = "http://localhost/inspector/"
    rule = client.post("/v1/rules", json=RULE, base_url=under).json
    assert rule["links"] == [{"rel": "self", "href": f"/inspector/v1/rules/{rule['uuid']}"}]
    assert client.get("/v1/rules", base_url=under).json["rules"][0]["links"] == rule["links"]
    assert client.get(f"/v1/rules/{rule['uuid']}", base_url=under).json == rule
    # Introspection links stay absolute, as ironic-inspector's are.
    assert client.get("/", base_url=under).json["versions"][0]["links"][0]["href"] == (
        "http://localhost/inspector/v1"
    )


def test_old_versions_get_200(client):
    response = client.post(
        "/v1/rules", json=RULE, headers={"X-OpenStack-Ironic-Inspector-API-Version": "1.5"}
    )
    assert response.status_code == 200


def test_given_uuid_and_duplicate(client):
    rule_uuid = str(uuid.uuid4())
    assert client.post("/v1/rules", json=dict(RULE, uuid=rule_uuid)).json["uuid"] == rule_uuid
    duplicate = client.post("/v1/rules", json=dict(RULE, uuid=rule_uuid))
    assert duplicate.status_code == 409


def test_delete_all_keeps_creation_order_until_then(client):
    uuids = [client.post("/v1/rules", json=RULE).json["uuid"] for _ in range(3)]
    assert [r["uuid"] for r in client.get("/v1/rules").json["rules"]] == uuids
    assert client.delete("/v1/rules").status_code == 204
    assert client.get("/v1/rules").json == {"rules": []}


def test_scope(client):
    rule = client.post("/v1/rules", json=dict(RULE, scope="rack-1")).json
    assert rule["scope"] == "rack-1"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"actions": []}, "body.actions: [] should be non-empty"),
        ({"actions": None}, "body.actions: None is not of type 'array'"),
        ({"actions": [{"action": "explode"}]}, "unknown action"),
        ({"actions": [{"action": "fail"}]}, "missing required parameter(s): message"),
        ({"actions": [{"action": "add-trait", "name": "X", "extra": 1}]}, "unexpected parameter"),
        ({"conditions": [{"op": "approx", "field": "x", "value": 1}]}, "unknown op"),
        ({"conditions": [{"op": "eq", "field": "x"}]}, "missing required parameter(s): value"),
        ({"conditions": [{"op": "eq", "value": 1}]}, "field"),
        ({"conditions": [{"op": "in-net", "field": "x", "value": "not-a-net"}]}, "network"),
        ({"conditions": [{"op": "matches", "field": "x", "value": "("}]}, "regular expression"),
        ({"conditions": [{"op": "eq", "field": "x", "value": 1, "multiple": "some"}]}, "multiple"),
        ({"conditions": [{"op": "eq", "field": "x", "value": 1, "invert": "yes"}]}, "invert"),
        ({"conditions": [{"op": "eq", "field": "http://x", "value": 1}]}, "field"),
        ({"conditions": "eq"}, "body.conditions: 'eq' is not of type"),
        ({"uuid": "not-a-uuid"}, "UUID"),
        ({"description": 5}, "string"),
        ({"colour": "blue"}, "'colour' was unexpected"),
        ({"actions": [{"name": "x"}]}, "body.actions[0]: 'action' is a required property"),
    ],
)
def test_invalid_rules_are_400(client, change, fragment):
    response = client.post("/v1/rules", json={**RULE, **change})
    assert response.status_code == 400
    assert fragment in response.json["error"]["message"]


def with_value(value, action="set-attribute", index=1):
    """RULE with an action at `index` whose formatted parameter is value."""
    key = "message" if action == "fail" else "value"
    extra = {"path": "/extra/x"} if action in ("set-attribute", "extend-attribute") else {}
    if action == "set-capability":
        extra = {"name": "cap"}
    actions = [{"action": "add-trait", "name": "CUSTOM_A"}] * index
    return {**RULE, "actions": [*actions, {"action": action, **extra, key: value}]}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{data.__class__}", "{data.__class__}: only item lookup such as {data[key]} is allowed"),
        ("{data[inventory].__class__}", "only item lookup"),
        ("{data[a].keys.__globals__[x]}", "only item lookup"),
        ("{config[x]}", "{config[x]}: unknown name 'config', use data or node"),
        ("{0}", "unknown name '0'"),
        ("{}", "{}: a field needs a name, use data or node"),
        ("{data[x]:{data}}", "{data[x]}: a format spec cannot hold a replacement field"),
        ("{data[x]:>{node[y]}}", "a format spec cannot hold a replacement field"),
        ("{data[x]:>99999999}", "format spec '>99999999' is too wide"),
        ("{data[x]!z}", "{data[x]}: unknown conversion 'z', use r, s or a"),
        ("{data[memory_mb]", "cannot format '{data[memory_mb]': expected '}'"),
        ("a } b", "Single '}' encountered"),
        (["ok", {"k": "{data.x}"}], "{data.x}: only item lookup"),
        ({"{node.driver}": "ok"}, "{node.driver}: only item lookup"),
    ],
)
@pytest.mark.parametrize("action", ["set-attribute", "set-capability", "extend-attribute", "fail"])
def test_values_that_can_never_be_formatted_are_400_naming_the_action(client, value, why, action):
    if action == "fail" and not isinstance(value, str):
        value = "{data.x}"  # a message is a string
        why = "{data.x}: only item lookup"
    response = client.post("/v1/rules", json=with_value(value, action))
    assert response.status_code == 400
    message = response.json["error"]["message"]
    key = "message" if action == "fail" else "value"
    assert message.startswith(f"Validation failed for actions: actions[1] ({action}) {key}: ")
    assert why in message
    assert client.get("/v1/rules").json == {"rules": []}


@pytest.mark.parametrize(
    "value",
    [
        "{data[inventory][interfaces][0][mac_address]}",
        "{node[properties][cpus]:>8}|{data[x]!r:.20}|{{literal}}",
        ["{data[a]}", {"{node[name]}": "{data[b][0]}"}, 3, None, True],
        "{data}",
    ],
)
def test_values_that_depend_on_the_data_are_accepted(client, value):
    # A missing key or a spec the value's type refuses can only be told with the data.
    response = client.post("/v1/rules", json=with_value(value))
    assert response.status_code == 201, response.json
    assert response.json["actions"][1]["value"] == value


def test_paths_and_names_are_not_checked_as_formats(client):
    # They are not formatted: braces in them are literal text.
    actions = [
        {"action": "set-attribute", "path": "/extra/{data.x}", "value": 1},
        {"action": "add-trait", "name": "CUSTOM_{data.__class__}"},
    ]
    assert client.post("/v1/rules", json={**RULE, "actions": actions}).status_code == 201


def test_not_an_object_is_400(client):
    assert client.post("/v1/rules", json=[RULE]).status_code == 400


def test_bad_rule_uuid_in_path_is_400(client):
    assert client.get("/v1/rules/not-a-uuid").status_code == 400
    assert client.delete("/v1/rules/not-a-uuid").status_code == 400


@pytest.mark.parametrize(
    "body",
    [
        b'{"description": "a\\u0000b", "actions": [{"action": "fail", "message": "m"}]}',
        b'{"actions": [{"action": "set-attribute", "path": "/a", "value": NaN}]}',
        b'{"actions": [{"action": "set-attribute", "path": "/a", "value": 1e999}]}',
        b'{"actions": [{"action": "set-attribute", "path": "/a", "value": -Infinity}]}',
    ],
)
def test_bodies_that_cannot_be_stored_or_returned_are_400(client, body):
    response = client.post("/v1/rules", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json["error"]["message"]


def with_pattern(pattern, op="matches", index=0):
    """RULE with a pattern condition at `index` of its conditions."""
    conditions = [{"op": "ge", "field": "memory_mb", "value": 1024}] * index
    condition = {"op": op, "field": "inventory.system_vendor.serial_number", "value": pattern}
    return {**RULE, "conditions": [*conditions, condition]}


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(\w)\1", "backreferences are not supported"),
        (r"eth(?!0)", "lookahead assertions are not supported"),
        ("a{99999999999}", "repetition count 99999999999 is over RE2's limit of 1000"),
        ("(a{10}){200}", "nested ones multiplied, go over 1000"),
        (r"\pL{1000}", "over RE2's memory bound"),
        ("(", "RE2: missing ): ("),
    ],
)
@pytest.mark.parametrize("op", ["matches", "contains"])
def test_patterns_re2_refuses_are_400_naming_the_condition(client, pattern, why, op):
    response = client.post("/v1/rules", json=with_pattern(pattern, op, index=1))
    assert response.status_code == 400
    message = response.json["error"]["message"]
    assert message.startswith(
        f"Invalid parameters for operator {op}: invalid regular expression: "
        f"{pattern!r} is not a regular expression RE2 accepts: "
    )
    assert why in message
    assert client.get("/v1/rules").json == {"rules": []}


def test_a_catastrophic_pattern_for_python_is_accepted(client):
    # RE2 runs `(a+)+$` in linear time: nothing to refuse (tests/unit/test_rule_regex.py).
    response = client.post("/v1/rules", json=with_pattern("(a+)+$"))
    assert response.status_code == 201, response.json
    assert response.json["conditions"][0]["value"] == "(a+)+$"


def test_a_long_pattern_is_quoted_cut_in_the_400(client):
    response = client.post("/v1/rules", json=with_pattern("(" * 20_000))
    assert response.status_code == 400
    message = response.json["error"]["message"]
    assert "is 20000 characters long, more than the 10000" in message
    assert len(message) < 500


@pytest.mark.parametrize(
    ("field", "why"),
    [
        ("data://", "Unable to parse field JSON path data://: empty path"),
        ("node://", "Unable to parse field JSON path node://: empty path"),
        ("data://  ", "Unable to parse field JSON path data://  : empty path"),
        ("data://.", "Unable to parse field JSON path data://.: cannot parse '.'"),
        ("data://a..b", "Unable to parse field JSON path data://a..b: cannot parse '..b'"),
        ("node://.driver", "Unable to parse field JSON path node://.driver: misplaced '.'"),
        ("data://a[*", "Unable to parse field JSON path data://a[*: cannot parse"),
        ("a b", "Unable to parse field JSON path a b: cannot parse"),
        ("port://x", "Unsupported scheme for field: port, valid values are node:// or data://"),
    ],
)
def test_field_paths_the_evaluator_refuses_are_400_naming_the_field(client, field, why):
    # ironic-inspector's words (its rules._validate_conditions), the reason ours
    condition = {"op": "eq", "field": field, "value": 1}
    conditions = [{"op": "ge", "field": "memory_mb", "value": 1024}, condition]
    response = client.post("/v1/rules", json={**RULE, "conditions": conditions})
    assert response.status_code == 400
    assert response.json["error"]["message"].startswith(why)
    assert client.get("/v1/rules").json == {"rules": []}
