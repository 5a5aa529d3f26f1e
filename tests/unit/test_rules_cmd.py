"""`inspector rules check FILE --node NODE [--json]`: the rules of FILE, validated as the API
validates them, checked and printed readably or as JSON."""

import json

import pytest

from inspector import cmd
from inspector.cmd import rules_cmd
from inspector.errors import BadRequest
from inspector.processing import rule_check
from tests import fixtures
from tests.unit.test_rules_check import MATCHING, NOT_MATCHING, WRONG_PATH


@pytest.fixture
def results(conf, ironic):
    node = ironic.add_node(name="vm-1")
    rules = [dict(rule, uuid=str(i)) for i, rule in enumerate([WRONG_PATH, NOT_MATCHING, MATCHING])]
    return rule_check.check(conf, rules, [(node, fixtures.load(fixtures.IPA))])


def test_render_says_which_rule_matches_and_why(results):
    text = rules_cmd.render(results)
    uuid = results[0]["uuid"]
    assert text.splitlines()[0] == f"Node vm-1 ({uuid})"
    assert "  Rule 'wrong path': NOT MATCHED" in text
    assert "[0] node://inventory.cpu.count ge 1: the field has no value -> false" in text
    assert "[1] data://inventory.cpu.count ge 64: found 2 -> false" in text
    assert "  Rule 'small vm': MATCHED" in text
    assert "      set-attribute path='/extra/cpu', value='AMD EPYC x2'" in text


def test_command_reads_the_file_and_prints(tmp_path, monkeypatch, capsys, results):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [WRONG_PATH, MATCHING]}))
    seen = {}

    def checked(conf, rules, nodes):
        seen.update(rules=rules, nodes=nodes)
        return results

    monkeypatch.setattr(rules_cmd, "checked", checked)
    config = tmp_path / "inspector.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    argv = ["--config-file", str(config), "rules", "check", str(path), "--node", "vm-1"]
    assert cmd.main(argv) == 0
    assert seen == {"rules": [WRONG_PATH, MATCHING], "nodes": ["vm-1"]}
    assert "Rule 'small vm': MATCHED" in capsys.readouterr().out
    assert cmd.main([*argv, "--node", "vm-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"nodes": results}
    assert seen["nodes"] == ["vm-1", "vm-2"]


def test_a_rule_refused_at_creation_is_refused(tmp_path, conf):
    path = tmp_path / "rule.json"
    path.write_text(json.dumps({"conditions": [], "actions": [{"action": "nope"}]}))
    with pytest.raises(BadRequest, match=r"rules\[0\]: .*unknown action 'nope'"):
        rules_cmd.checked(conf, rules_cmd._rules_document(str(path)), ["vm-1"])
    path.write_text("[")
    with pytest.raises(BadRequest, match="cannot read rules from"):
        rules_cmd._rules_document(str(path))


def test_render_says_why_a_node_was_not_checked(results):
    stopped = [{**results[0], "rules": [], "error": "not checked: the check ran past ..."}]
    assert rules_cmd.render(stopped).splitlines()[1] == "  not checked: the check ran past ..."
