"""POST /v1/rules/check (1.19): rules evaluated against a node's stored processed data and
its Ironic node, applying nothing; what each condition found and decided, the actions as
they would be formatted; the same refusals as rule creation, the node cap, unknown nodes."""

import copy
import uuid

import pytest

from inspector.processing import rule_check
from inspector.processing import rules as rule_engine
from inspector.processing.context import ProcessingContext
from tests import fixtures, seed

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
V18 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}

#: A wrong path: the CPU count is in the data, not on the node.
WRONG_PATH = {
    "description": "wrong path",
    "conditions": [{"op": "ge", "field": "node://inventory.cpu.count", "value": 1}],
    "actions": [{"action": "add-trait", "name": "CUSTOM_CPU"}],
}
#: A condition that does not hold: the machine has 2 CPUs.
NOT_MATCHING = {
    "description": "big cpus",
    "conditions": [
        {"op": "eq", "field": "data://inventory.cpu.architecture", "value": "x86_64"},
        {"op": "ge", "field": "data://inventory.cpu.count", "value": 64},
    ],
    "actions": [{"action": "add-trait", "name": "CUSTOM_BIG"}],
}
#: One that matches, with formatted values from the data and the node.
MATCHING = {
    "description": "small vm",
    "conditions": [
        {"op": "le", "field": "inventory.cpu.count", "value": 4},
        {"op": "eq", "field": "node://driver", "value": "fake-hardware"},
    ],
    "actions": [
        {
            "action": "set-attribute",
            "path": "/extra/cpu",
            "value": "{data[inventory][cpu][model_name]} x{data[inventory][cpu][count]}",
        },
        {"action": "set-capability", "name": "node_{node[name]}", "value": "{node[name]}"},
    ],
}


@pytest.fixture
def node(store, ironic):
    """An introspected node: in Ironic, with its processed data stored."""
    ironic_node = ironic.add_node(name="vm-1")
    seed.node(store, ironic_node.uuid, "finished")
    store.store_data(ironic_node.uuid, fixtures.load(fixtures.IPA), processed=True)
    return ironic_node


def _check(client, **body):
    return client.post("/v1/rules/check", json=body, headers=V19)


def test_says_which_rule_matches_and_why_and_changes_nothing(client, store, ironic, node):
    data_before = store.get_data(node.uuid, processed=True)
    record_before = store.get_node(node.uuid)
    calls_before = ironic.calls
    answer = _check(client, rules=[WRONG_PATH, NOT_MATCHING, MATCHING], node="vm-1")
    assert answer.status_code == 200, answer.json
    [checked] = answer.json["nodes"]
    assert (checked["uuid"], checked["name"]) == (node.uuid, "vm-1")
    wrong, not_matching, matching = checked["rules"]

    assert (wrong["matched"], wrong["outcome"]) == (False, "not matched")
    assert wrong["conditions"] == [
        {
            "index": 0,
            "field": "node://inventory.cpu.count",
            "op": "ge",
            "value": 1,
            "multiple": "any",
            "invert": False,
            "missing": True,
            "found": [],
            "result": False,
            "error": None,
        }
    ]
    assert wrong["actions"] == []

    assert not not_matching["matched"]
    first, second = not_matching["conditions"]
    assert (first["found"], first["result"]) == (["x86_64"], True)
    assert (second["found"], second["result"], second["missing"]) == ([2], False, False)

    assert matching["matched"] and matching["outcome"] == "matched"
    assert [c["result"] for c in matching["conditions"]] == [True, True]
    assert matching["actions"] == [
        {"action": "set-attribute", "path": "/extra/cpu", "value": "AMD EPYC x2"},
        # `name` is not formatted (only value and message are): the check shows it.
        {"action": "set-capability", "name": "node_{node[name]}", "value": "vm-1"},
    ]
    # Nothing applied: the stored data as before, no Ironic call but the node reads.
    assert store.get_data(node.uuid, processed=True) == data_before
    assert store.get_node(node.uuid) == record_before
    assert len(store.history(node.uuid)) == 1  # the seed's request, no other
    assert {call.name for call in ironic.history[calls_before:]} == {"get_node"}
    assert ironic.nodes[node.uuid].extra == {}
    assert client.get("/v1/rules", headers=V19).json["rules"] == []


def test_stored_rules_by_uuid_and_several_nodes(client, store, ironic, node):
    other = ironic.add_node(name="vm-2", driver="ipmi")
    seed.node(store, other.uuid, "finished")
    store.store_data(other.uuid, fixtures.load(fixtures.IPA), processed=True)
    rule = client.post("/v1/rules", json=MATCHING, headers=V19).json
    answer = _check(client, uuids=[rule["uuid"]], nodes=[node.uuid, "vm-2"])
    assert answer.status_code == 200, answer.json
    first, second = answer.json["nodes"]
    assert first["rules"][0]["matched"] and first["rules"][0]["uuid"] == rule["uuid"]
    assert not second["rules"][0]["matched"]
    assert second["rules"][0]["conditions"][1]["found"] == ["ipmi"]


def test_an_action_that_would_fail_is_reported_with_its_message(client, node):
    failing = {
        "conditions": [],
        "actions": [
            {"action": "fail", "message": "old BIOS {data[inventory][cpu][count]}"},
        ],
    }
    missing_key = {
        "actions": [{"action": "set-attribute", "path": "/extra/x", "value": "{data[nope]}"}],
    }
    answer = _check(client, rules=[failing, missing_key, MATCHING], node=node.uuid)
    fails, missing, matching = answer.json["nodes"][0]["rules"]
    assert fails["outcome"] == "error" and not fails["matched"]
    assert "old BIOS 2" in fails["error"]
    assert fails["actions"] == [{"action": "fail", "message": "old BIOS 2"}]
    assert missing["outcome"] == "error" and "no key 'nope'" in missing["error"]
    assert matching["matched"]  # each rule is checked on its own


def test_scope(client, ironic, store):
    node = ironic.add_node(properties={"inspection_scope": "gpu"})
    seed.node(store, node.uuid, "finished")
    store.store_data(node.uuid, fixtures.load(fixtures.IPA), processed=True)
    scoped = dict(MATCHING, scope="storage")
    [result] = _check(client, rules=[scoped], node=node.uuid).json["nodes"][0]["rules"]
    assert (result["matched"], result["outcome"], result["conditions"]) == (
        False,
        "out of scope",
        [],
    )


def test_long_values_found_are_summarised(client, node):
    rule = {
        "conditions": [{"op": "is-empty", "field": "inventory", "invert": True}],
        "actions": [{"action": "add-trait", "name": "CUSTOM_X"}],
    }
    [result] = _check(client, rules=[rule], node=node.uuid).json["nodes"][0]["rules"]
    assert result["matched"]
    [shown] = result["conditions"][0]["found"]
    assert shown.startswith("<an object of ") and shown.endswith(" characters in JSON>")


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (
            {"conditions": [{"op": "eq", "field": "data://a/b", "value": 1}], "actions": []},
            "rules[0]: Validation failed for actions",
        ),
        (
            {
                "conditions": [{"op": "eq", "field": "data://a/b", "value": 1}],
                "actions": [{"action": "add-trait", "name": "X"}],
            },
            "rules[0]: Unable to parse field JSON path data://a/b",
        ),
        (
            {
                "conditions": [{"op": "matches", "field": "a", "value": "(a)\\1"}],
                "actions": [{"action": "add-trait", "name": "X"}],
            },
            "rules[0]: Invalid parameters for operator matches",
        ),
        (
            {"actions": [{"action": "set-attribute", "path": "/x", "value": "{data.a}"}]},
            "rules[0]: Validation failed for actions: actions[0] (set-attribute) value",
        ),
    ],
)
def test_rules_refused_as_at_creation(client, node, rule, words):
    answer = _check(client, rules=[rule], node=node.uuid)
    assert answer.status_code == 400
    assert words in answer.json["error"]["message"]


def test_bad_bodies(client, node):
    cases = [
        {"node": node.uuid},
        {"rules": [MATCHING], "uuids": [str(uuid.uuid4())], "node": node.uuid},
        {"rules": [MATCHING]},
        {"rules": [MATCHING], "node": node.uuid, "nodes": [node.uuid]},
        {"rules": [MATCHING], "node": node.uuid, "apply": True},
        {"uuids": ["not-a-uuid"], "node": node.uuid},
    ]
    for body in cases:
        assert _check(client, **body).status_code == 400, body


def test_more_nodes_than_the_cap(client, conf, node):
    conf.set_override("max_rules_check_nodes", 2, group="api")
    nodes = [str(uuid.uuid4()) for _ in range(3)]
    answer = _check(client, rules=[MATCHING], nodes=nodes)
    assert answer.status_code == 400
    assert "max_rules_check_nodes = 2" in answer.json["error"]["message"]


def test_unknown_nodes_and_rules_are_404_naming_them(client, ironic, node):
    assert "nowhere" in _check(client, rules=[MATCHING], node="nowhere").json["error"]["message"]
    bare = ironic.add_node(name="never-introspected")
    answer = _check(client, rules=[MATCHING], nodes=[node.uuid, "never-introspected"])
    assert answer.status_code == 404
    assert "never-introspected" in answer.json["error"]["message"]
    assert bare.uuid not in answer.json["error"]["message"]
    gone = str(uuid.uuid4())
    answer = _check(client, uuids=[gone], node=node.uuid)
    assert answer.status_code == 404 and gone in answer.json["error"]["message"]


def test_older_versions_get_404(client, node):
    answer = client.post("/v1/rules/check", json={"rules": [MATCHING], "node": node.uuid})
    assert answer.status_code == 404
    assert "1.19" in answer.json["error"]["message"]
    answer = client.post(
        "/v1/rules/check", json={"rules": [MATCHING], "node": node.uuid}, headers=V18
    )
    assert answer.status_code == 404


def test_the_evaluation_timeout_bounds_the_whole_call(conf, node, ironic, store):
    """One bound for the call: the rule it expires in says so, later rules and nodes are
    not evaluated, and say why."""
    other = ironic.add_node(name="vm-2")
    data = store.get_data(node.uuid, processed=True)
    now = [0.0]

    def clock() -> float:
        now[0] += 0.4  # each look at the clock: 0.4 s later
        return now[0]

    conf.set_override("rules_evaluation_timeout", 1.0, group="processing")
    rules = [dict(MATCHING, uuid=str(i)) for i in range(3)]
    first, second = rule_check.check(conf, rules, [(node, data), (other, data)], clock=clock)
    assert first["error"] is None
    assert [r["outcome"] for r in first["rules"]] == ["error"]
    assert "rules_evaluation_timeout" in first["rules"][0]["error"]
    assert second["rules"] == []
    assert second["error"] == (
        "not checked: the check ran past [processing] rules_evaluation_timeout (1 s)"
    )


def test_the_check_and_processing_evaluate_alike(conf, node, store):
    """The same rules on the same data: processing records what the check said it would."""
    data = store.get_data(node.uuid, processed=True)
    rules = [dict(r, uuid=str(i)) for i, r in enumerate([WRONG_PATH, NOT_MATCHING, MATCHING])]
    [checked] = rule_check.check(conf, rules, [(node, copy.deepcopy(data))], clock=lambda: 0.0)
    checked = checked["rules"]
    context = ProcessingContext(node=node, ports=[], data=data, conf=conf)
    ran = rule_engine.evaluate(rules, context)
    assert ran == [r["uuid"] for r in checked if r["matched"]] == ["2"]
    assert context.changes.patch == [{"op": "add", "path": "/extra/cpu", "value": "AMD EPYC x2"}]


def test_a_broken_condition_after_a_false_one_is_no_error(conf, node, store):
    """Processing stops at the false condition and never meets the broken one: not
    matched, the broken one reported; the same broken condition first is the rule's error."""
    broken = {"op": "in-net", "field": "inventory.bmc_address", "value": "not a network"}
    false = {"op": "eq", "field": "inventory.cpu.count", "value": 99}
    rules = [
        {"uuid": "a", "conditions": [false, broken], "actions": MATCHING["actions"]},
        {"uuid": "b", "conditions": [broken, false], "actions": MATCHING["actions"]},
    ]
    data = {"inventory": {"bmc_address": "10.0.0.1", "cpu": {"count": 2}}}
    [checked] = rule_check.check(conf, rules, [(node, data)])
    after, first = checked["rules"]
    assert (after["outcome"], after["error"]) == ("not matched", None)
    assert after["conditions"][1]["error"] == "in-net: 'not a network' is not a network"
    assert after["conditions"][1]["result"] is False
    assert first["outcome"] == "error" and "is not a network" in first["error"]
    context = ProcessingContext(node=node, ports=[], data=data, conf=conf)
    assert rule_engine.evaluate(rules[:1], context) == []
