"""Auth strategies through Flask's test client: noauth, http_basic (htpasswd) and keystone.

A small app of our own carries a public route and protected routes that call Policy.authorize,
so these tests do not depend on which API routes exist.
"""

import base64
import logging
import os
import re
from importlib import metadata

import bcrypt
import flask
import pytest
from oslo_context import context as oslo_context

from inspector import conf as config
from inspector.api import app as app_factory
from inspector.api import auth, errors, htpasswd, policy
from inspector.errors import ConfigError

ADMIN_RULE = "introspection:start"
READER_RULE = "introspection:status"

#: keystonemiddleware imports WebOb, which imports the deprecated cgi module once.
KEYSTONE_IMPORT = pytest.mark.filterwarnings("ignore:'cgi' is deprecated:DeprecationWarning")
#: keystonemiddleware's major version: what its auth_token does without an auth plugin.
KEYSTONEMIDDLEWARE_MAJOR = int(metadata.version("keystonemiddleware").split(".")[0])


def build_app(conf, **install_kwargs) -> flask.Flask:
    app = flask.Flask("test_auth")
    errors.register(app)
    checker = policy.Policy(conf)

    @app.get("/public")
    @auth.public
    def public_view():
        return dict(flask.g.credentials)

    @app.get("/admin")
    def admin_view():
        checker.authorize(ADMIN_RULE, flask.g.credentials)
        return dict(flask.g.credentials)

    @app.get("/reader")
    def reader_view():
        checker.authorize(READER_RULE, flask.g.credentials)
        return dict(flask.g.credentials)

    @app.get("/context")
    def context_view():
        """What other modules may read of the caller: its oslo.context RequestContext."""
        context = flask.g.context
        assert isinstance(context, auth.RequestContext)
        return {
            "user_id": context.user_id,
            "user_name": context.user_name,
            "project_id": context.project_id,
            "project_name": context.project_name,
            "system_scope": context.system_scope,
            "roles": context.roles,
            "service_roles": context.service_roles,
            "is_admin_project": context.is_admin_project,
            "credentials_are_its_policy_values": flask.g.credentials == context.to_policy_values(),
        }

    auth.install(app, conf, **install_kwargs)
    return app


# --- noauth ---------------------------------------------------------------------------


def test_noauth_caller_is_an_admin(conf):
    client = build_app(conf).test_client()
    response = client.get("/admin")
    assert response.status_code == 200
    assert response.json["roles"] == ["admin"]
    assert response.json["system_scope"] == "all"
    assert response.json["is_public_api"] is False
    assert client.get("/reader").status_code == 200
    assert client.get("/context").json["credentials_are_its_policy_values"] is True


def test_context_is_never_oslo_contexts_thread_store(conf, monkeypatch):
    # Emptied: oslo.context fills an empty store even with overwrite=False.
    monkeypatch.setattr(oslo_context._request_store, "context", None, raising=False)
    client = build_app(conf).test_client()
    assert client.get("/context").status_code == 200
    assert client.get("/public").status_code == 200
    assert oslo_context.get_current() is None


def test_public_route_gets_public_credentials(conf):
    response = build_app(conf).test_client().get("/public")
    assert response.status_code == 200
    assert response.json["is_public_api"] is True
    assert response.json["roles"] == []


def test_public_marker():
    def view():
        return ""

    assert not auth.is_public(view)
    assert auth.public(view) is view
    assert auth.is_public(view)


# --- http_basic -----------------------------------------------------------------------


def bcrypt_hash(password: str) -> str:
    # Cost 4, the lowest: these tests check the logic, not bcrypt's strength.
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def write_atomically(path, text: str) -> None:
    """As editors and config tools do: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


LONG_PASSWORD = "p" * 80


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "htpasswd"
    path.write_text(
        "# managed by hand\n"
        "\n"
        f"alice:{bcrypt_hash('alice-pw')}:admin\n"
        f"bob:{bcrypt_hash('bob-pw')}:reader, baremetal_observer\n"
        f"carol:{bcrypt_hash('carol-pw')}\n"
        # htpasswd and bcrypt<5 hashed only the first 72 bytes of a longer password.
        f"dave:{bcrypt_hash(LONG_PASSWORD[:72])}:admin\n"
    )
    return path


@pytest.fixture
def basic_conf(conf, user_file):
    conf.set_override("auth_strategy", "http_basic")
    conf.set_override("http_basic_auth_user_file", str(user_file))
    return conf


@pytest.fixture
def basic_client(basic_conf):
    return build_app(basic_conf).test_client()


def assert_challenge(response):
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Basic realm="inspector"'
    # ironic-inspector's words (utils.check_auth), whatever was missing or wrong
    assert response.json["error"]["message"] == "Authentication required"


def test_admin_passes_admin_rule(basic_client):
    response = basic_client.get("/admin", headers=basic("alice", "alice-pw"))
    assert response.status_code == 200
    assert response.json["user_id"] == "alice"
    assert response.json["roles"] == ["admin"]
    # The file's users are the whole deployment's: system-scoped, as Keystone would say.
    assert response.json["system_scope"] == "all"
    assert response.json["is_public_api"] is False
    context = basic_client.get("/context", headers=basic("alice", "alice-pw")).json
    assert context["user_name"] == "alice"
    assert context["credentials_are_its_policy_values"] is True


def test_reader_is_refused_admin_rule_but_passes_reader_rule(basic_client):
    response = basic_client.get("/admin", headers=basic("bob", "bob-pw"))
    assert response.status_code == 403
    assert ADMIN_RULE in response.json["error"]["message"]
    response = basic_client.get("/reader", headers=basic("bob", "bob-pw"))
    assert response.status_code == 200
    assert response.json["roles"] == ["reader", "baremetal_observer"]


def test_user_without_roles_gets_default_roles_and_a_warning(basic_conf, caplog):
    with caplog.at_level(logging.WARNING, logger="inspector.api.htpasswd"):
        client = build_app(basic_conf).test_client()
    warned = [r.getMessage() for r in caplog.records if "carol" in r.getMessage()]
    assert len(warned) == 1
    assert "default_roles" in warned[0]
    assert not any("alice" in r.getMessage() for r in caplog.records)
    assert client.get("/admin", headers=basic("carol", "carol-pw")).status_code == 200


def test_default_roles_option_grants_less(basic_conf):
    auth.http_basic.register(basic_conf)
    basic_conf.set_override("default_roles", ["reader"], group="http_basic")
    client = build_app(basic_conf).test_client()
    assert client.get("/admin", headers=basic("carol", "carol-pw")).status_code == 403
    assert client.get("/reader", headers=basic("carol", "carol-pw")).status_code == 200


def test_password_longer_than_bcrypt_reads_is_truncated_like_htpasswd(basic_client):
    assert basic_client.get("/admin", headers=basic("dave", LONG_PASSWORD)).status_code == 200
    assert_challenge(basic_client.get("/admin", headers=basic("alice", LONG_PASSWORD)))


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "wrong"), ("alice", ""), ("nobody", "alice-pw"), ("ALICE", "alice-pw")],
)
def test_wrong_credentials_are_401_with_challenge(basic_client, user, password):
    assert_challenge(basic_client.get("/admin", headers=basic(user, password)))


def test_missing_credentials_are_401_with_challenge(basic_client):
    assert_challenge(basic_client.get("/admin"))
    assert_challenge(basic_client.get("/reader"))


@pytest.mark.parametrize(
    "header",
    [
        "Basic",
        "Basic ",
        "Basic !!!not-base64!!!",
        "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),
        "Basic " + base64.b64encode(b"alice").decode(),
        "Basic " + base64.b64encode(b":alice-pw").decode(),
        "Bearer abc.def.ghi",
        "garbage",
    ],
)
def test_malformed_authorization_is_401_not_500(basic_client, header):
    assert_challenge(basic_client.get("/admin", headers={"Authorization": header}))


def test_public_route_needs_no_credentials(basic_client):
    response = basic_client.get("/public")
    assert response.status_code == 200
    assert response.json["is_public_api"] is True
    assert "WWW-Authenticate" not in response.headers


def test_unknown_route_is_404_not_401(basic_client):
    response = basic_client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert "WWW-Authenticate" not in response.headers


def test_wrong_method_is_405_not_401(basic_client):
    assert basic_client.delete("/admin").status_code == 405


def test_reload_picks_up_a_new_user(basic_client, user_file):
    assert_challenge(basic_client.get("/admin", headers=basic("erin", "erin-pw")))
    write_atomically(user_file, user_file.read_text() + f"erin:{bcrypt_hash('erin-pw')}:admin\n")
    assert basic_client.get("/admin", headers=basic("erin", "erin-pw")).status_code == 200


def test_reload_drops_a_removed_user(basic_client, user_file):
    assert basic_client.get("/admin", headers=basic("alice", "alice-pw")).status_code == 200
    kept = [line for line in user_file.read_text().splitlines() if not line.startswith("alice:")]
    write_atomically(user_file, "\n".join(kept) + "\n")
    assert_challenge(basic_client.get("/admin", headers=basic("alice", "alice-pw")))
    assert basic_client.get("/reader", headers=basic("bob", "bob-pw")).status_code == 200


def test_broken_reload_keeps_previous_users_and_logs(basic_client, user_file, caplog):
    write_atomically(user_file, "alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n")
    with caplog.at_level(logging.ERROR, logger="inspector.api.htpasswd"):
        response = basic_client.get("/admin", headers=basic("alice", "alice-pw"))
    assert response.status_code == 200
    assert any("keeping the" in r.getMessage() for r in caplog.records)
    assert all("W6ph5Mm5Pz8" not in r.getMessage() for r in caplog.records)


def test_deleted_file_keeps_previous_users(basic_client, user_file):
    user_file.unlink()
    assert basic_client.get("/admin", headers=basic("alice", "alice-pw")).status_code == 200


def test_unchanged_file_is_not_reread(user_file):
    users = htpasswd.UserFile(str(user_file), ["admin"])
    reads = []
    original = users._read
    users._read = lambda: reads.append(1) or original()
    for _ in range(3):
        assert users.authenticate("bob", "bob-pw") is not None
    assert reads == []


@pytest.mark.parametrize(
    "hash_text",
    [
        "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",  # htpasswd -s
        "$apr1$3bTzZdQ2$0tQkX5iY.zRxy3rQ9wB1a/",  # htpasswd -m (MD5)
        "rqXLkVYcGX7fA",  # crypt
        "plaintext-password",
        "$2x$04$" + "a" * 53,  # the broken bcrypt variant
        "$2b$04$tooshort",
    ],
)
def test_non_bcrypt_hash_is_refused_at_start_up(basic_conf, user_file, hash_text):
    user_file.write_text(f"alice:{bcrypt_hash('alice-pw')}:admin\nmallory:{hash_text}:admin\n")
    with pytest.raises(ConfigError) as excinfo:
        build_app(basic_conf)
    message = str(excinfo.value)
    assert "line 2" in message
    assert "'mallory'" in message
    assert "bcrypt" in message
    assert str(user_file) in message
    assert hash_text not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("just-a-name\n", "line 1: expected user:bcrypt-hash"),
        ("a:b:c:d\n", "line 1: expected user:bcrypt-hash"),
        (":{hash}\n", "line 1: expected user:bcrypt-hash"),
        ("bob:{hash}\n# x\nbob:{hash}:reader\n", "line 3: user 'bob' is listed twice"),
    ],
)
def test_malformed_file_is_refused_at_start_up(basic_conf, user_file, text, expected):
    user_file.write_text(text.format(hash=bcrypt_hash("x")))
    with pytest.raises(ConfigError, match=expected):
        build_app(basic_conf)


def test_missing_file_is_a_config_error_naming_it(basic_conf, tmp_path):
    missing = tmp_path / "no-such-htpasswd"
    basic_conf.set_override("http_basic_auth_user_file", str(missing))
    with pytest.raises(ConfigError, match=re.escape(str(missing))):
        build_app(basic_conf)


def test_unreadable_file_is_a_config_error_naming_it(basic_conf, user_file):
    user_file.write_bytes(b"alice:\xff\xfe\n")
    with pytest.raises(ConfigError, match=re.escape(str(user_file))):
        build_app(basic_conf)


# --- keystone -------------------------------------------------------------------------
# keystonemiddleware's own auth_token runs here; only its call to Keystone is replaced by a
# table of token bodies (fetch_token). These tests do not test Keystone itself: no real
# Keystone can run here, so token issuing and validation are out of their reach.

KEYSTONE_URL = "http://keystone.example.com/identity/v3"
SERVICE_PASSWORD = "service-Secret-4b7d"


def token_body(*roles: str, expires_at: str = "2999-01-01T00:00:00.000000Z") -> dict:
    domain = {"id": "default", "name": "Default"}
    return {
        "token": {
            "methods": ["password"],
            "issued_at": "2020-01-01T00:00:00.000000Z",
            "expires_at": expires_at,
            "user": {"id": "user-" + "-".join(roles), "name": "someone", "domain": domain},
            "project": {"id": "project-1", "name": "baremetal", "domain": domain},
            # Keystone says so when [resource] admin_project_name is set; keystoneauth
            # reads a missing one as true.
            "is_admin_project": False,
            "roles": [{"id": f"id-{r}", "name": r} for r in roles],
            "catalog": [],
        }
    }


def system_token_body(*roles: str) -> dict:
    """A system-scoped token: "system": {"all": true} instead of a project."""
    body = token_body(*roles)
    del body["token"]["project"]
    body["token"]["system"] = {"all": True}
    body["token"]["user"]["id"] = "system-user-" + "-".join(roles)
    return body


def service_token_body() -> dict:
    body = token_body("service")
    body["token"]["user"].update(id="ironic-user", name="ironic")
    body["token"]["project"].update(id="service-project", name="service")
    return body


TOKENS = {
    "admin-token": token_body("admin", "member"),
    "reader-token": token_body("reader"),
    "member-token": token_body("member"),
    "expired-admin-token": token_body("admin", expires_at="2020-01-01T01:00:00.000000Z"),
    "system-reader-token": system_token_body("reader"),
    "system-admin-token": system_token_body("admin", "member", "reader"),
    "service-token": service_token_body(),
}


def stub_middleware_factory(created):
    """auth_token.AuthProtocol whose token validation reads TOKENS instead of asking Keystone."""
    from keystonemiddleware import auth_token  # noqa: PLC0415

    # What auth_token's own Keystone client raises for a token Keystone refuses.
    from keystonemiddleware.auth_token import _exceptions as ksm_exceptions  # noqa: PLC0415

    class StubAuthProtocol(auth_token.AuthProtocol):
        def fetch_token(self, token, **kwargs):
            try:
                return TOKENS[token]
            except KeyError:
                raise ksm_exceptions.InvalidToken("unknown token") from None

    def factory(wsgi_app, options):
        created.append(dict(options))
        return StubAuthProtocol(wsgi_app, {**options, "www_authenticate_uri": KEYSTONE_URL})

    return factory


def service_user_conf(tmp_path, **options: str):
    """auth_strategy = keystone, with the service user keystonemiddleware validates tokens
    as (and `options` of [keystone_authtoken] besides)."""
    lines = {
        "auth_type": "password",
        "auth_url": KEYSTONE_URL,
        "username": "inspector",
        "password": SERVICE_PASSWORD,
        "user_domain_name": "Default",
        "project_name": "service",
        "project_domain_name": "Default",
        **options,
    }
    path = tmp_path / "keystone.conf"
    path.write_text(
        f"[DEFAULT]\nauth_strategy = keystone\nstate_path = {tmp_path}\n[keystone_authtoken]\n"
        + "".join(f"{name} = {value}\n" for name, value in lines.items())
    )
    return config.load(["--config-file", str(path)])


@pytest.fixture
def keystone_conf(tmp_path):
    return service_user_conf(tmp_path)


@pytest.fixture
def created():
    return []


@pytest.fixture
def keystone_client(keystone_conf, created):
    app = build_app(keystone_conf, middleware_factory=stub_middleware_factory(created))
    return app.test_client()


def token(value: str) -> dict[str, str]:
    return {"X-Auth-Token": value}


@KEYSTONE_IMPORT
def test_keystone_middleware_gets_our_conf_and_delays_its_decision(keystone_client, created):
    (options,) = created
    assert options["delay_auth_decision"] is True
    assert options["oslo_config_config"].auth_strategy == "keystone"
    # auth_token registered its options on the ConfigOpts it was given.
    assert "www_authenticate_uri" in options["oslo_config_config"].keystone_authtoken


@KEYSTONE_IMPORT
def test_keystone_admin_token_passes_admin_rule(keystone_client):
    response = keystone_client.get("/admin", headers=token("admin-token"))
    assert response.status_code == 200
    assert sorted(response.json["roles"]) == ["admin", "member"]
    assert response.json["user_id"] == "user-admin-member"
    assert response.json["project_id"] == "project-1"
    assert response.json["is_public_api"] is False


@KEYSTONE_IMPORT
def test_keystone_project_reader_is_refused_and_system_reader_passes(keystone_client):
    response = keystone_client.get("/admin", headers=token("reader-token"))
    assert response.status_code == 403
    assert ADMIN_RULE in response.json["error"]["message"]
    assert keystone_client.get("/reader", headers=token("reader-token")).status_code == 403
    assert keystone_client.get("/reader", headers=token("member-token")).status_code == 403
    response = keystone_client.get("/reader", headers=token("system-reader-token"))
    assert response.status_code == 200
    assert response.json["system_scope"] == "all"
    assert response.json["project_id"] is None
    assert keystone_client.get("/admin", headers=token("system-reader-token")).status_code == 403
    assert keystone_client.get("/admin", headers=token("system-admin-token")).status_code == 200


@KEYSTONE_IMPORT
def test_keystone_context_comes_from_oslo_context(keystone_client):
    context = keystone_client.get("/context", headers=token("admin-token")).json
    assert context == {
        "user_id": "user-admin-member",
        "user_name": "someone",
        "project_id": "project-1",
        "project_name": "baremetal",
        "system_scope": None,
        "roles": ["admin", "member"],
        "service_roles": [],
        "is_admin_project": False,
        "credentials_are_its_policy_values": True,
    }


@KEYSTONE_IMPORT
def test_keystone_service_token_gives_service_roles(keystone_client):
    headers = {**token("reader-token"), "X-Service-Token": "service-token"}
    context = keystone_client.get("/context", headers=headers).json
    assert context["roles"] == ["reader"]
    assert context["service_roles"] == ["service"]
    assert context["user_id"] == "user-reader"


@KEYSTONE_IMPORT
def test_keystone_service_user_passes(keystone_client):
    response = keystone_client.get("/admin", headers=token("service-token"))
    assert response.status_code == 200
    assert response.json["roles"] == ["service"]
    assert response.json["user_id"] == "ironic-user"


@KEYSTONE_IMPORT
@pytest.mark.parametrize(
    "forged",
    [
        {"OpenStack-System-Scope": "all"},
        {"X-Roles": "admin", "X-Is-Admin-Project": "True", "X-Service-Roles": "service"},
    ],
)
def test_keystone_forged_scope_or_roles_are_overwritten(keystone_client, forged):
    headers = {**token("reader-token"), **forged}
    assert keystone_client.get("/reader", headers=headers).status_code == 403
    context = keystone_client.get("/context", headers=headers).json
    assert context["system_scope"] is None
    assert context["roles"] == ["reader"]
    assert context["service_roles"] == []
    assert context["is_admin_project"] is False


@KEYSTONE_IMPORT
@pytest.mark.parametrize(
    "headers",
    [
        {},
        token("unknown-token"),
        token("expired-admin-token"),
        # Forged identity headers are stripped by auth_token before it decides.
        {"X-Identity-Status": "Confirmed", "X-Roles": "admin", "X-User-Id": "forged"},
        {**token("unknown"), "X-Identity-Status": "Confirmed", "X-Roles": "admin"},
    ],
)
def test_keystone_without_confirmed_identity_is_401(keystone_client, headers):
    response = keystone_client.get("/admin", headers=headers)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == f'Keystone uri="{KEYSTONE_URL}"'
    assert response.json["error"]["message"] == "Authentication required"


@KEYSTONE_IMPORT
def test_keystone_public_route_passes_without_token(keystone_client):
    response = keystone_client.get("/public")
    assert response.status_code == 200
    assert response.json["is_public_api"] is True


@KEYSTONE_IMPORT
def test_keystone_unknown_route_is_404(keystone_client):
    assert keystone_client.get("/v1/nothing-here").status_code == 404


@KEYSTONE_IMPORT
def test_keystone_with_the_unmodified_middleware(keystone_conf):
    """The real AuthProtocol, offline: requests without a token never reach Keystone."""
    from keystonemiddleware import auth_token  # noqa: PLC0415

    for group, opts in auth_token.list_opts():
        keystone_conf.register_opts(opts, group=group)
    keystone_conf.set_override("www_authenticate_uri", KEYSTONE_URL, group="keystone_authtoken")
    app = build_app(keystone_conf)
    assert isinstance(app.wsgi_app.app, auth_token.AuthProtocol)  # inside errors.Shield
    client = app.test_client()
    assert client.get("/public").status_code == 200
    response = client.get("/admin", headers={"X-Identity-Status": "Confirmed", "X-Roles": "admin"})
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == f'Keystone uri="{KEYSTONE_URL}"'


@KEYSTONE_IMPORT
def test_keystone_without_a_service_user_is_refused(conf):
    # What the middleware would need at every request: refused before it is built.
    conf.set_override("auth_strategy", "keystone")
    with pytest.raises(ConfigError, match=r"\[keystone_authtoken\] auth_type is not set"):
        build_app(conf)


@KEYSTONE_IMPORT
@pytest.mark.parametrize("path", ["/v1/introspection", "/metrics"])
def test_a_keystone_middleware_that_fails_is_a_json_503(
    conf, store, queue, ironic, monkeypatch, caplog, path
):
    """The real auth_token, past a start-up check that could not tell (here: none):
    without an auth plugin it cannot find the URI its 401 names, and (keystonemiddleware
    13 and later) raises MissingAuthPlugin from its response phase, outside Flask.
    Earlier ones (OpenStack 2025.2 and 2026.1's) answer that 401 themselves."""
    conf.set_override("auth_strategy", "keystone")
    monkeypatch.setattr(auth, "keystone_problems", lambda conf: [])
    app = app_factory.create_app(conf, store=store, queue=queue, ironic=ironic)
    response = app.test_client().get(path)
    if KEYSTONEMIDDLEWARE_MAJOR < 13:
        assert response.status_code == 401
        return
    assert response.status_code == 503
    assert response.json["error"]["message"] == auth.KEYSTONE_FAILED
    assert response.headers["X-OpenStack-Request-Id"].startswith("req-")
    assert response.headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"
    (failure,) = [r for r in caplog.records if "authentication middleware" in r.getMessage()]
    assert "MissingAuthPlugin" in failure.getMessage()
    assert not failure.exc_info  # one line; its stack only at debug level


@KEYSTONE_IMPORT
def test_any_exception_of_the_auth_middleware_is_a_json_503(keystone_conf, caplog):
    def exploding(wsgi_app, options):
        def middleware(environ, start_response):
            raise RuntimeError("boom")

        return middleware

    response = build_app(keystone_conf, middleware_factory=exploding).test_client().get("/admin")
    assert response.status_code == 503
    assert response.json == {
        "error": {
            "message": "Authentication is unavailable: Keystone's middleware failed; see the "
            "service log"
        }
    }
    assert "RuntimeError: boom" in caplog.text
