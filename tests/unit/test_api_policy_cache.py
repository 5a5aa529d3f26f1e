"""The API's policy checks: decisions remembered until the rules change, and the policy
file looked at no more than once per recheck interval."""

import logging
import os
import uuid

import pytest
from oslo_policy import opts as policy_opts

from inspector.api import params, policy
from inspector.errors import Forbidden

#: A system-scoped reader: the role alone, in a project, no longer reads statuses.
READER = {
    "roles": ["reader"],
    "user_id": "r",
    "project_id": None,
    "system_scope": "all",
    "is_public_api": False,
}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def use_policy_file(conf, path) -> None:
    for group, opts in policy_opts.list_opts():
        conf.register_opts(opts, group=group)
    conf.set_override("policy_file", str(path), group="oslo_policy")


def write_policy(path, text: str) -> None:
    path.write_text(text)
    # A later mtime than any earlier write's, whatever the file system's resolution.
    later = (path.stat().st_mtime if path.exists() else 0) + 10
    os.utime(path, (later, later))


def allowed(checker, rule, credentials) -> bool:
    try:
        checker.authorize(rule, credentials)
    except Forbidden:
        return False
    return True


def test_decisions_are_remembered(conf, monkeypatch):
    checker = policy.Policy(conf)
    assert allowed(checker, "introspection:status", READER)
    assert not allowed(checker, "introspection:start", READER)
    evaluations = []
    monkeypatch.setattr(
        checker.enforcer, "authorize", lambda *args, **kwargs: evaluations.append(args)
    )
    assert allowed(checker, "introspection:status", READER)
    assert not allowed(checker, "introspection:start", READER)
    assert evaluations == []
    # Other credentials are other decisions.
    assert allowed(checker, "introspection:status", {**READER, "roles": ["admin"]})
    assert len(evaluations) == 1


def test_a_refusal_from_memory_is_logged(conf, caplog):
    caplog.set_level(logging.INFO, logger=policy.__name__)
    checker = policy.Policy(conf)
    for _ in range(2):
        assert not allowed(checker, "introspection:start", READER)
    assert [r.getMessage() for r in caplog.records].count(
        "Policy introspection:start refused user r"
    ) == 2


def test_unhashable_credentials_are_checked_every_time(conf):
    checker = policy.Policy(conf)
    odd = {**READER, "extra": {"not": "hashable"}}
    assert allowed(checker, "introspection:status", odd)
    assert allowed(checker, "introspection:status", odd)


def test_memory_is_bounded(conf, monkeypatch):
    monkeypatch.setattr(policy, "MAX_DECISIONS", 3)
    checker = policy.Policy(conf)
    for index in range(10):
        assert allowed(checker, "introspection:status", {**READER, "user_id": str(index)})
    assert len(checker._decisions) <= 3


def test_changed_file_is_seen_after_the_recheck_interval(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    write_policy(path, '"introspection:status": "role:auditor"\n')
    use_policy_file(conf, path)
    clock = Clock()
    checker = policy.Policy(conf, recheck_interval=1.0, clock=clock)
    assert not allowed(checker, "introspection:status", READER)
    write_policy(path, '"introspection:status": "role:reader"\n')
    clock.now += 0.5
    assert not allowed(checker, "introspection:status", READER)  # not looked at yet
    clock.now += 0.5
    assert allowed(checker, "introspection:status", READER)  # remembered refusal forgotten


def test_changed_file_is_seen_at_once_without_interval(conf, tmp_path):
    path = tmp_path / "policy.yaml"
    write_policy(path, '"introspection:status": "role:auditor"\n')
    use_policy_file(conf, path)
    checker = policy.Policy(conf)
    assert not allowed(checker, "introspection:status", READER)
    write_policy(path, '"introspection:status": "role:reader"\n')
    assert allowed(checker, "introspection:status", READER)


@pytest.mark.parametrize(
    "value",
    [
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        "1BE26C0B-03F2-4D2E-AE87-C02D7F33C123",
        "1be26c0b03f24d2eae87c02d7f33c123",
        "{1be26c0b-03f2-4d2e-ae87-c02d7f33c123}",
        "urn:uuid:1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c123\n",
        " 1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        "1be26c0b-03f2-4d2e-ae87-c02d7f33c12g",
        "1be26c0b-03f2-4d2e-ae87c-02d7f33c123",
        "node-1",
        "",
    ],
)
def test_is_uuid_is_the_canonical_form(value):
    try:
        expected = str(uuid.UUID(value)) == value.lower()
    except ValueError:
        expected = False
    assert params.is_uuid(value) is expected
