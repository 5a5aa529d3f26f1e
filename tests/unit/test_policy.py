"""oslo.policy rules: ironic-inspector's names and defaults, operator overrides, the sample file."""

import os
import pathlib
import sys

import pytest
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from inspector.api import policy
from inspector.errors import ConfigError, Forbidden

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "etc" / "inspector" / "policy.yaml.sample"

ADMIN = {"roles": ["admin"], "user_id": "a", "project_id": None, "is_public_api": False}
READER = {"roles": ["reader"], "user_id": "r", "project_id": None, "is_public_api": False}
#: Authenticated, but with no role any rule knows.
MEMBER = {"roles": ["member"], "user_id": "m", "project_id": None, "is_public_api": False}
#: What auth.py gives every caller of a public route.
ANONYMOUS = {"roles": [], "user_id": None, "project_id": None, "is_public_api": True}

#: Expected outcome of each operation rule for admin, reader, member, anonymous (public route).
OUTCOMES = {
    "introspection": (False, False, False, True),
    "introspection:version": (False, False, False, True),
    "introspection:continue": (False, False, False, True),
    "introspection:status": (True, True, False, False),
    "introspection:start": (True, False, False, False),
    "introspection:abort": (True, False, False, False),
    "introspection:data": (True, False, False, False),
    "introspection:reapply": (True, False, False, False),
    "introspection:rule:get": (True, False, False, False),
    "introspection:rule:delete": (True, False, False, False),
    "introspection:rule:create": (True, False, False, False),
    # Not ironic-inspector's: our Prometheus endpoint, readable like statuses.
    "introspection:metrics": (True, True, False, False),
}

HTTP_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def checker(conf):
    return policy.Policy(conf)


def allowed(checker, rule, credentials) -> bool:
    try:
        checker.authorize(rule, credentials)
    except Forbidden as exc:
        assert rule in exc.message
        assert exc.http_status == 403
        return False
    return True


def use_policy_file(conf, path) -> None:
    # Registers [oslo_policy] on our ConfigOpts, as the Enforcer will. Not opts.set_defaults:
    # it changes the default of oslo.policy's shared Opt objects, for every later test.
    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.set_override("policy_file", str(path), group="oslo_policy")


def test_rule_names_are_ironic_inspectors():
    names = [rule.name for rule in policy.list_rules()]
    assert len(names) == len(set(names))
    assert set(names) == {"is_admin", "is_observer", "public_api", "default", *OUTCOMES}


def test_every_rule_is_documented():
    for rule in policy.list_rules():
        assert rule.description and rule.description.strip(), rule.name
        if rule.name in OUTCOMES:
            assert isinstance(rule, oslo_policy.DocumentedRuleDefault), rule.name
            assert rule.operations, rule.name
            for operation in rule.operations:
                assert operation["method"] in HTTP_METHODS, rule.name
                assert operation["path"].startswith("/"), rule.name


@pytest.mark.parametrize("rule", sorted(OUTCOMES))
def test_outcomes(checker, rule):
    got = tuple(allowed(checker, rule, c) for c in (ADMIN, READER, MEMBER, ANONYMOUS))
    assert got == OUTCOMES[rule]


@pytest.mark.parametrize("role", ["admin", "administrator", "baremetal_admin", "service", "ADMIN"])
def test_admin_roles(checker, role):
    credentials = {**MEMBER, "roles": ["member", role]}
    assert allowed(checker, "introspection:start", credentials)
    assert allowed(checker, "introspection:status", credentials)


@pytest.mark.parametrize("role", ["reader", "baremetal_observer"])
def test_reader_roles(checker, role):
    credentials = {**MEMBER, "roles": [role]}
    assert allowed(checker, "introspection:status", credentials)
    assert not allowed(checker, "introspection:abort", credentials)


@pytest.mark.parametrize("rule", ["introspection:unknown", "is_admin:typo", ""])
def test_unknown_rule_is_denied(checker, rule, caplog):
    assert not allowed(checker, rule, ADMIN)
    assert any("not registered" in r.getMessage() for r in caplog.records)


def test_operator_policy_file_overrides_a_rule(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"introspection:status": "role:auditor"\n"is_admin": "role:superuser"\n')
    use_policy_file(conf, path)
    checker = policy.Policy(conf)
    auditor = {**MEMBER, "roles": ["auditor"]}
    assert allowed(checker, "introspection:status", auditor)
    assert not allowed(checker, "introspection:status", READER)
    assert not allowed(checker, "introspection:start", ADMIN)
    assert allowed(checker, "introspection:start", {**MEMBER, "roles": ["superuser"]})
    # Rules the file does not name keep their defaults.
    assert allowed(checker, "introspection:continue", ANONYMOUS)


def test_operator_policy_file_is_reread_when_it_changes(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"introspection:status": "role:auditor"\n')
    use_policy_file(conf, path)
    checker = policy.Policy(conf)
    assert not allowed(checker, "introspection:status", READER)
    path.write_text('"introspection:status": "role:reader"\n')
    # A later mtime than the first write's, whatever the file system's clock resolution.
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))
    assert allowed(checker, "introspection:status", READER)


def test_explicit_policy_file_that_is_missing_is_a_config_error(conf, tmp_path):
    use_policy_file(conf, tmp_path / "nowhere.yaml")
    with pytest.raises(ConfigError, match=r"nowhere\.yaml"):
        policy.Policy(conf)


@pytest.mark.parametrize(
    "text",
    [
        '"introspection:status": [unclosed\n',
        '"introspection:status": "rule:no_such_rule"\n',
    ],
)
def test_broken_policy_file_is_a_config_error(conf, tmp_path, text):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    use_policy_file(conf, path)
    with pytest.raises(ConfigError, match="policy_file"):
        policy.Policy(conf)


def test_sample_policy_file_is_current():
    assert SAMPLE.read_text() == policy.render_sample(), (
        "etc/inspector/policy.yaml.sample is stale: run "
        "`oslopolicy-sample-generator --namespace inspector "
        "--output-file etc/inspector/policy.yaml.sample`"
    )


def test_sample_names_every_rule_and_operation():
    text = policy.render_sample()
    for rule in policy.list_rules():
        assert f'#"{rule.name}": "{rule.check_str}"' in text
        for operation in getattr(rule, "operations", []):
            assert f"# {operation['method']}  {operation['path']}" in text


def test_enforcer_entry_point_for_oslopolicy_tools(monkeypatch, tmp_path):
    config_file = tmp_path / "inspector.conf"
    config_file.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    argv = ["oslopolicy-policy-generator", "--namespace", "inspector", "--output-file=out.yaml"]
    monkeypatch.setattr(sys, "argv", [*argv, "--config-file", str(config_file)])
    enforcer = policy.get_enforcer()
    assert set(enforcer.registered_rules) == {r.name for r in policy.list_rules()}
    assert enforcer.conf.state_path == str(tmp_path)
