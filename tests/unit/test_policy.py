"""oslo.policy rules: ironic-inspector's names and secure RBAC defaults, their deprecated role
rules ([oslo_policy] enforce_new_defaults), operator overrides, the sample file."""

import os
import pathlib
import re
import sys

import pytest
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from inspector.api import policy
from inspector.errors import ConfigError, Forbidden

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "etc" / "inspector" / "policy.yaml.sample"


def creds(*roles: str, system: bool = False, project: str | None = "p1", **extra) -> dict:
    """Policy values as oslo.context gives them for a Keystone token."""
    return {
        "user_id": "u-" + "-".join(roles),
        "user_domain_id": "default",
        "system_scope": "all" if system else None,
        "domain_id": None,
        "project_id": None if system else project,
        "project_domain_id": None if system else "default",
        "roles": list(roles),
        "is_admin_project": True,
        "service_user_id": None,
        "service_user_domain_id": None,
        "service_project_id": None,
        "service_project_domain_id": None,
        "service_roles": [],
        "is_public_api": False,
        **extra,
    }


# Keystone's default roles imply each other: admin > member > reader.
SYSTEM_ADMIN = creds("admin", "member", "reader", system=True)
SYSTEM_READER = creds("reader", system=True)
PROJECT_ADMIN = creds("admin", "member", "reader")
PROJECT_MEMBER = creds("member", "reader")
PROJECT_READER = creds("reader")
#: Ironic's service user: the service role, in the service project.
SERVICE = creds("service", project="service")
#: What auth.py gives every caller of a public route.
ANONYMOUS = {"roles": [], "user_id": None, "project_id": None, "is_public_api": True}
#: The personas, in the order of the OUTCOMES columns.
PERSONAS = (
    SYSTEM_ADMIN,
    SYSTEM_READER,
    PROJECT_ADMIN,
    PROJECT_MEMBER,
    PROJECT_READER,
    SERVICE,
    ANONYMOUS,
)

W = WRITE = (True, False, True, False, False, True, False)
R = READ = (True, True, True, False, False, True, False)
P = PUBLIC = (False, False, False, False, False, False, True)
#: Each operation rule, for system admin, system reader, project admin, project member,
#: project reader, service, anonymous (public route): ironic-inspector 12.5's defaults.
OUTCOMES = {
    "introspection": P,
    "introspection:version": P,
    "introspection:continue": P,
    "introspection:status": R,
    "introspection:start": W,
    "introspection:abort": W,
    "introspection:data": W,
    "introspection:reapply": W,
    "introspection:rule:get": W,
    "introspection:rule:delete": W,
    "introspection:rule:create": W,
    # Not ironic-inspector's: our rules check and fleet report (API 1.19), for whoever
    # may read introspection data; our Prometheus endpoint, readable like statuses.
    "introspection:rule:check": W,
    "introspection:report": W,
    "introspection:metrics": R,
}
#: The same under enforce_new_defaults = false: the deprecated role rules pass too, and
#: none of Keystone's default roles is in them beyond admin (is_observer is only
#: baremetal_observer, as in ironic-inspector 12.5): a project reader or member still reads
#: no status.
LEGACY_OUTCOMES = dict(OUTCOMES)
#: ironic-inspector 12.5's check strings (ironic_inspector/policy.py), character for character.
UPSTREAM_ADMIN = "(role:admin and system_scope:all) or (role:admin) or (role:service)"
UPSTREAM_READER = "(role:reader and system_scope:all) or (role:admin) or (role:service)"

HTTP_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}


@pytest.fixture
def checker(conf):
    return policy.Policy(conf)


def register_policy_opts(conf) -> None:
    # Registers [oslo_policy] on our ConfigOpts, as the Enforcer will. Not opts.set_defaults:
    # it changes the default of oslo.policy's shared Opt objects, for every later test.
    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)


def legacy_policy(conf) -> policy.Policy:
    """A Policy under enforce_new_defaults = false, and oslo.policy's warnings it gives."""
    register_policy_opts(conf)
    conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    with pytest.warns(UserWarning) as warned:
        checker = policy.Policy(conf)
    deprecated = sorted(
        rule.name for rule in policy.list_rules() if getattr(rule, "deprecated_rule", None)
    )
    # One per rule with a deprecated alternative, naming the old and the new check.
    assert sorted(str(w.message).split('"')[1] for w in warned) == deprecated
    assert all("was deprecated in W in favor of" in str(w.message) for w in warned)
    return checker


@pytest.fixture
def legacy_checker(conf):
    return legacy_policy(conf)


def allowed(checker, rule, credentials) -> bool:
    try:
        checker.authorize(rule, credentials)
    except Forbidden as exc:
        assert rule in exc.message
        assert exc.http_status == 403
        return False
    return True


def use_policy_file(conf, path) -> None:
    register_policy_opts(conf)
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


def test_defaults_are_ironic_inspectors():
    rules = {rule.name: rule for rule in policy.list_rules()}
    for name, outcome in OUTCOMES.items():
        expected = {W: UPSTREAM_ADMIN, R: UPSTREAM_READER, P: "rule:public_api"}[outcome]
        assert rules[name].check_str == expected, name
        # No scope_types, as upstream: a project-scoped service user must pass, whatever
        # oslo.policy's enforce_scope (removed in oslo.policy 6) says.
        assert rules[name].scope_types is None, name


def test_every_default_keeps_its_old_rule_as_deprecated():
    for rule in policy.list_rules():
        if rule.name not in OUTCOMES or OUTCOMES[rule.name] == P:
            # None; an empty list in oslo.policy 4.x.
            assert not getattr(rule, "deprecated_rule", None), rule.name
            continue
        old = rule.deprecated_rule
        assert old.name == rule.name
        assert old.check_str == (
            "rule:is_admin or rule:is_observer" if OUTCOMES[rule.name] == R else "rule:is_admin"
        )
        assert old.deprecated_reason and old.deprecated_since == "W"
    for name in ("is_admin", "is_observer"):
        base = next(r for r in policy.list_rules() if r.name == name)
        assert base.deprecated_for_removal and base.deprecated_reason, name


def test_new_defaults_are_oslo_policys_default(conf):
    checker = policy.Policy(conf)
    assert checker.enforcer.conf.oslo_policy.enforce_new_defaults is True


@pytest.mark.parametrize("rule", sorted(OUTCOMES))
def test_outcomes(checker, rule):
    got = tuple(allowed(checker, rule, c) for c in PERSONAS)
    assert got == OUTCOMES[rule]


@pytest.mark.parametrize("rule", sorted(LEGACY_OUTCOMES))
def test_outcomes_with_the_deprecated_rules(legacy_checker, rule):
    got = tuple(allowed(legacy_checker, rule, c) for c in PERSONAS)
    assert got == LEGACY_OUTCOMES[rule]


def test_enforce_new_defaults_false_is_logged(conf, caplog):
    legacy_policy(conf)
    assert any("enforce_new_defaults is false" in r.getMessage() for r in caplog.records)


#: Old role names: (role, passes start under the new defaults, passes status under them).
#: Under enforce_new_defaults = false every one passes as before.
OLD_ROLES = [
    ("admin", True, True),
    ("ADMIN", True, True),
    ("service", True, True),
    ("administrator", False, False),
    ("baremetal_admin", False, False),
    ("reader", False, False),
    ("baremetal_observer", False, False),
]


@pytest.mark.parametrize(("role", "start", "status"), OLD_ROLES)
def test_old_roles_in_a_project(conf, role, start, status):
    credentials = creds("member", role)
    checker = policy.Policy(conf)
    assert allowed(checker, "introspection:start", credentials) is start
    assert allowed(checker, "introspection:status", credentials) is status


@pytest.mark.parametrize(("role", "start", "status"), OLD_ROLES)
def test_old_roles_with_the_deprecated_rules(conf, role, start, status):
    credentials = creds("member", role)
    checker = legacy_policy(conf)
    admin = role.lower() in ("admin", "administrator", "baremetal_admin", "service")
    assert allowed(checker, "introspection:start", credentials) is admin
    reads = admin or role == "baremetal_observer"
    assert allowed(checker, "introspection:status", credentials) is reads


def test_system_reader_reads_but_does_not_write(checker):
    assert allowed(checker, "introspection:status", SYSTEM_READER)
    assert not allowed(checker, "introspection:data", SYSTEM_READER)
    # The scope is the token's: a reader with a project is no system reader.
    assert not allowed(checker, "introspection:status", {**SYSTEM_READER, "system_scope": None})


@pytest.mark.parametrize("rule", ["introspection:unknown", "is_admin:typo", ""])
def test_unknown_rule_is_denied(checker, rule, caplog):
    assert not allowed(checker, rule, SYSTEM_ADMIN)
    assert any("not registered" in r.getMessage() for r in caplog.records)


def test_credentials_are_not_changed(checker):
    credentials = creds("reader", system=True)
    before = dict(credentials)
    assert allowed(checker, "introspection:status", credentials)
    assert credentials == before


def test_operator_policy_file_overrides_a_rule(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(
        '"introspection:status": "role:auditor"\n"introspection:start": "role:superuser"\n'
    )
    use_policy_file(conf, path)
    checker = policy.Policy(conf)
    assert allowed(checker, "introspection:status", creds("auditor"))
    assert not allowed(checker, "introspection:status", SYSTEM_READER)
    assert not allowed(checker, "introspection:start", SYSTEM_ADMIN)
    assert allowed(checker, "introspection:start", creds("superuser"))
    # Rules the file does not name keep their defaults.
    assert allowed(checker, "introspection:continue", ANONYMOUS)
    assert allowed(checker, "introspection:abort", PROJECT_ADMIN)


def test_a_rule_the_file_sets_gets_no_deprecated_alternative(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"introspection:status": "role:auditor"\n')
    use_policy_file(conf, path)
    register_policy_opts(conf)
    conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    with pytest.warns(UserWarning) as warned:
        checker = policy.Policy(conf)
    assert all("introspection:status" not in str(w.message).split(" was ")[0] for w in warned)
    observer = creds("member", "baremetal_observer")
    assert not allowed(checker, "introspection:status", observer)
    assert allowed(checker, "introspection:metrics", observer)


def test_overriding_a_deprecated_base_rule_warns(conf, tmp_path):
    """is_admin and is_observer are only the deprecated rules' now; a file that sets one
    is told so (at each look at the file), and under enforce_new_defaults = false its roles
    pass the old rules."""
    path = tmp_path / "policy.yaml"
    path.write_text('"is_admin": "role:superuser"\n')
    use_policy_file(conf, path)
    with pytest.warns(UserWarning, match='"is_admin".*deprecated for removal'):
        checker = policy.Policy(conf)
        assert not allowed(checker, "introspection:start", creds("superuser"))
    conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    with pytest.warns(UserWarning):
        checker = policy.Policy(conf)
        assert allowed(checker, "introspection:start", creds("superuser"))
        assert not allowed(checker, "introspection:start", creds("baremetal_admin"))


def test_operator_policy_file_is_reread_when_it_changes(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text('"introspection:status": "role:auditor"\n')
    use_policy_file(conf, path)
    checker = policy.Policy(conf)
    assert not allowed(checker, "introspection:status", SYSTEM_READER)
    path.write_text('"introspection:status": "role:reader"\n')
    # A later mtime than the first write's, whatever the file system's clock resolution.
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))
    assert allowed(checker, "introspection:status", SYSTEM_READER)


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


def _rules_of_sample(text: str) -> list[str]:
    """A policy sample's rules, one string each (its comment lines and its rule line), with
    the line breaks the generator's wrapping put in gone."""
    rules, lines = [], []
    for line in text.splitlines():
        if line.strip():
            lines.append(line.lstrip("#").strip())
        elif lines:
            rules.append(" ".join(lines))
            lines = []
    if lines:
        rules.append(" ".join(lines))
    return rules


def test_sample_says_what_ironic_inspectors_says_rule_by_rule():
    """The sample equals ironic-inspector 12.5's generated sample (its check strings,
    deprecated rules, descriptions and operations), followed by our own rules."""
    upstream = (ROOT / "tests/fixtures/upstream/ironic-inspector-12.5-policy.yaml").read_text()
    # The fixture's header says where it came from; the sample starts after it.
    upstream = upstream.split("\n", 5)[5]
    ours = _rules_of_sample(policy.render_sample())
    expected = _rules_of_sample(upstream)
    assert ours[: len(expected)] == expected
    ours_only = ("introspection:rule:check", "introspection:report", "introspection:metrics")
    # Each with its deprecated alias after it, as the generator writes them.
    named = (re.search(r'"(introspection[^"]*)":', rule)[1] for rule in ours[len(expected) :])
    names = dict.fromkeys(named)
    assert list(names) == list(ours_only)


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
