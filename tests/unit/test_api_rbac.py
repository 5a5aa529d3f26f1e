"""Secure RBAC through the real API: each Keystone persona against every endpoint.

keystonemiddleware's own auth_token sets the identity headers; only its call to Keystone is
replaced by a table of token bodies, so the credentials are built as in production
(oslo.context from keystonemiddleware's headers). Three tables: the defaults (ironic-inspector
12.5's), [oslo_policy] enforce_new_defaults = false (the deprecated role rules pass too),
and the stricter policy docs/api.md offers (system scope and the service role only).
"""

import pathlib
import re
import uuid

import pytest
import yaml
from oslo_policy import opts as policy_opts

from inspector.api import app as app_factory
from inspector.machine import State
from tests import seed

ROOT = pathlib.Path(__file__).resolve().parents[2]
KEYSTONE_URL = "http://keystone.example.com/identity/v3"
V = {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}

FINISHED = "5c1e9a70-3b2d-4f6e-8a9b-0c1d2e3f4a5b"
WAITING = "6d2f0b81-4c3e-4a7f-9b0c-1d2e3f4a5b6c"
RULE_KEPT = "7e3a1c92-5d4f-4b80-8c1d-2e3f4a5b6c7d"
RULE_DELETED = "8f4b2da3-6e50-4c91-9d2e-3f4a5b6c7d8e"
RULE = {"uuid": str(uuid.UUID(int=7)), "actions": [{"action": "add-trait", "name": "CUSTOM_X"}]}


def token_body(*roles: str, project: str | None = "project-1", user: str = "someone") -> dict:
    """A Keystone v3 token; project None: system-scoped."""
    domain = {"id": "default", "name": "Default"}
    token = {
        "methods": ["password"],
        "issued_at": "2020-01-01T00:00:00.000000Z",
        "expires_at": "2999-01-01T00:00:00.000000Z",
        "user": {"id": f"{user}-id", "name": user, "domain": domain},
        "roles": [{"id": f"id-{r}", "name": r} for r in roles],
        "is_admin_project": False,
        "catalog": [],
    }
    if project is None:
        token["system"] = {"all": True}
    else:
        token["project"] = {"id": f"{project}-id", "name": project, "domain": domain}
    return {"token": token}


# Keystone's default roles imply each other (admin > member > reader): a token lists all.
TOKENS = {
    "system-admin": token_body("admin", "member", "reader", project=None),
    "system-reader": token_body("reader", project=None),
    "project-admin": token_body("admin", "member", "reader"),
    "project-member": token_body("member", "reader"),
    "project-reader": token_body("reader"),
    # Ironic's service user (its [inspector] credentials): the service role, project service.
    "service": token_body("service", project="service", user="ironic"),
}
PERSONAS = [*TOKENS, "anonymous"]

#: What each endpoint's policy is ("public", "read", "write") and its answer when allowed.
#: The requests touch distinct resources, so that each succeeds whatever ran before it.
ENDPOINTS = {
    "GET /": ("public", 200),
    "GET /v1": ("public", 200),
    "GET /healthcheck": ("public", 200),
    # No node waits for this ramdisk: public, so past authentication and policy to a 404.
    "POST /v1/continue": ("public", 404),
    "GET /v1/introspection": ("read", 200),
    f"GET /v1/introspection/{FINISHED}": ("read", 200),
    "GET /metrics": ("read", 200),
    "POST /v1/introspection/{fresh}": ("write", 202),
    f"POST /v1/introspection/{WAITING}/abort": ("write", 202),
    f"GET /v1/introspection/{FINISHED}/data": ("write", 200),
    f"GET /v1/introspection/{FINISHED}/data/unprocessed": ("write", 200),
    f"POST /v1/introspection/{FINISHED}/data/unprocessed": ("write", 202),
    "GET /v1/rules": ("write", 200),
    f"GET /v1/rules/{RULE_KEPT}": ("write", 200),
    "POST /v1/rules": ("write", 201),
    f"DELETE /v1/rules/{RULE_DELETED}": ("write", 204),
    "DELETE /v1/rules": ("write", 204),
}

#: Which kinds of policy each persona passes: the defaults, ironic-inspector 12.5's.
#: A project admin is an admin ("admin is admin across all projects", as upstream).
DEFAULTS = {
    "system-admin": {"public", "read", "write"},
    "system-reader": {"public", "read"},
    "project-admin": {"public", "read", "write"},
    "project-member": {"public"},
    "project-reader": {"public"},
    "service": {"public", "read", "write"},
    "anonymous": {"public"},
}
#: enforce_new_defaults = false: the old rules pass too; as ironic-inspector 12.5's, they
#: name no Keystone default role beyond admin (is_observer is baremetal_observer alone), so
#: these personas get what the new defaults give them.
DEPRECATED_RULES_TOO = dict(DEFAULTS)
#: The stricter policy of docs/api.md: no project admins.
SYSTEM_SCOPE_ONLY = {**DEFAULTS, "project-admin": {"public"}}


def expected(persona: str, passes: set[str]) -> dict[str, int]:
    answers = {}
    for endpoint, (kind, success) in ENDPOINTS.items():
        if kind in passes:
            answers[endpoint] = success
        else:
            answers[endpoint] = 401 if persona == "anonymous" else 403
    return answers


def fetch_token(_self, token, **_kwargs):
    """AuthProtocol.fetch_token: the table instead of Keystone."""
    from keystonemiddleware.auth_token import _exceptions as ksm_exceptions  # noqa: PLC0415

    try:
        return TOKENS[token]
    except KeyError:
        raise ksm_exceptions.InvalidToken("unknown token") from None


def docs_policy() -> str:
    """The policy file docs/api.md offers for system scope only (its yaml block)."""
    text = (ROOT / "docs" / "api.md").read_text()
    match = re.search(r"```yaml\n(# System scope only.*?)```", text, re.S)
    assert match, "docs/api.md lost its system-scope-only policy"
    return match.group(1)


@pytest.fixture
def keystone_conf(conf, monkeypatch):
    from keystoneauth1 import loading  # noqa: PLC0415
    from keystonemiddleware import auth_token  # noqa: PLC0415

    monkeypatch.setattr(auth_token.AuthProtocol, "fetch_token", fetch_token)
    conf.set_override("auth_strategy", "keystone")
    for group, opts in [*auth_token.list_opts(), *policy_opts.list_opts()]:
        conf.register_opts(opts, group=group)
    conf.set_override("www_authenticate_uri", KEYSTONE_URL, group="keystone_authtoken")
    # The service user auth_token validates tokens as (start-up refuses it without one).
    conf.register_opts(loading.get_auth_plugin_conf_options("password"), "keystone_authtoken")
    conf.set_override("auth_type", "password", group="keystone_authtoken")
    conf.set_override("auth_url", KEYSTONE_URL, group="keystone_authtoken")
    conf.set_override("store_data", "database", group="processing")
    return conf


@pytest.fixture
def resources(store, ironic):
    """A finished node with its data, a waiting node, a node to start, two rules."""
    seed.node(store, FINISHED, State.FINISHED)
    store.store_data(FINISHED, {"inventory": {"cpu": {"count": 4}}}, processed=True)
    store.store_data(FINISHED, {"inventory": {}}, processed=False)
    seed.node(store, WAITING, State.WAITING)
    for rule in (RULE_KEPT, RULE_DELETED):
        store.create_rule({"uuid": rule, "conditions": [], "actions": RULE["actions"]})
    return {"fresh": ironic.add_node(provision_state="manageable").uuid}


def call_every_endpoint(app, persona: str, resources: dict) -> dict[str, int]:
    client = app.test_client()
    headers = dict(V)
    if persona != "anonymous":
        headers["X-Auth-Token"] = persona
    answers = {}
    for endpoint in ENDPOINTS:
        method, path = endpoint.split(" ", 1)
        body = RULE if endpoint == "POST /v1/rules" else None
        if endpoint == "POST /v1/continue":
            body = {"inventory": {"interfaces": [{"mac_address": "52:54:00:12:34:56"}]}}
        response = client.open(path.format(**resources), method=method, headers=headers, json=body)
        answers[endpoint] = response.status_code
    return answers


def check(app, persona, passes, resources, store, queue):
    got = call_every_endpoint(app, persona, resources)
    assert got == expected(persona, passes)
    if "write" not in passes:
        # Refused means untouched: nothing queued, no rule created or deleted.
        assert queue.requests == []
        assert {r["uuid"] for r in store.rule_summaries()} == {RULE_KEPT, RULE_DELETED}
        assert store.get_node(WAITING).state == State.WAITING


@pytest.mark.parametrize("persona", PERSONAS)
def test_defaults(keystone_conf, store, queue, ironic, resources, persona):
    app = app_factory.create_app(keystone_conf, store=store, queue=queue, ironic=ironic)
    check(app, persona, DEFAULTS[persona], resources, store, queue)


@pytest.mark.parametrize("persona", PERSONAS)
def test_enforce_new_defaults_false(keystone_conf, store, queue, ironic, resources, persona):
    keystone_conf.set_override("enforce_new_defaults", False, group="oslo_policy")
    # oslo.policy warns once per rule whose deprecated alternative it adds.
    with pytest.warns(UserWarning, match="was deprecated in W"):
        app = app_factory.create_app(keystone_conf, store=store, queue=queue, ironic=ironic)
    check(app, persona, DEPRECATED_RULES_TOO[persona], resources, store, queue)


@pytest.mark.parametrize("persona", PERSONAS)
def test_system_scope_only_policy_of_the_docs(
    keystone_conf, store, queue, ironic, resources, persona, tmp_path
):
    path = tmp_path / "policy.yaml"
    path.write_text(docs_policy())
    keystone_conf.set_override("policy_file", str(path), group="oslo_policy")
    app = app_factory.create_app(keystone_conf, store=store, queue=queue, ironic=ironic)
    check(app, persona, SYSTEM_SCOPE_ONLY[persona], resources, store, queue)


def test_docs_policy_names_every_protected_rule():
    from inspector.api import policy_rules as rules  # noqa: PLC0415

    names = set(yaml.safe_load(docs_policy()))
    guarded = {rules.ADMIN, rules.READER}
    protected = {r.name for r in rules.OPERATION_RULES if r.check_str in guarded}
    assert names == protected
