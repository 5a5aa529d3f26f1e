"""API authentication: who the caller is (noauth, http_basic, keystone), put on flask.g.credentials.

Routes marked @public need no credentials. What a caller may do is decided by policy.py, not here.
"""

import logging
from collections.abc import Callable
from typing import Any

import flask
from oslo_config import cfg

from inspector.api import htpasswd
from inspector.conf import http_basic
from inspector.errors import ConfigError, Unauthorized

LOG = logging.getLogger(__name__)

#: Attribute that @public sets on a view function.
PUBLIC_MARKER = "inspector_public_api"

#: Realm of the HTTP basic challenge.
REALM = "inspector"

#: The keystonemiddleware headers we read. They are trustworthy only because auth_token
#: strips any copy the client sent before it validates the token.
IDENTITY_HEADERS = {
    "user_id": "X-User-Id",
    "user_name": "X-User-Name",
    "user_domain_id": "X-User-Domain-Id",
    "project_id": "X-Project-Id",
    "project_name": "X-Project-Name",
    "project_domain_id": "X-Project-Domain-Id",
    "domain_id": "X-Domain-Id",
    "system_scope": "X-System-Scope",
}

Identify = Callable[[flask.Request], dict[str, Any]]


def public(view):
    """Decorator: the view needs no credentials (API roots, the ramdisk's /v1/continue)."""
    setattr(view, PUBLIC_MARKER, True)
    return view


def is_public(view) -> bool:
    return getattr(view, PUBLIC_MARKER, False) is True


def credentials(roles: list[str], user_id: str | None = None, **extra: Any) -> dict[str, Any]:
    """Credentials in the form policy rules see them (oslo.policy's creds dict)."""
    return {
        "roles": roles,
        "user_id": user_id,
        "project_id": None,
        "is_public_api": False,
        **extra,
    }


def _public_credentials() -> dict[str, Any]:
    return credentials([], is_public_api=True)


def _noauth(_request: flask.Request) -> dict[str, Any]:
    return credentials(["admin"])


def _basic_identify(users: htpasswd.UserFile) -> Identify:
    def identify(request: flask.Request) -> dict[str, Any]:
        # Werkzeug answers None for a missing, non-Basic or undecodable header.
        auth = request.authorization
        if auth is None or auth.type != "basic" or not auth.username:
            raise Unauthorized("Authentication required: HTTP basic credentials are missing")
        user = users.authenticate(auth.username, auth.password or "")
        if user is None:
            LOG.info(
                "Wrong HTTP basic credentials for user %s on %s %s",
                auth.username,
                request.method,
                request.path,
            )
            raise Unauthorized("Authentication failed: wrong user name or password")
        return credentials(list(user.roles), user.name, user_name=user.name)

    return identify


def _challenge(response: flask.Response) -> flask.Response:
    """after_request hook: a 401 tells the client to use HTTP basic auth."""
    if response.status_code == 401:
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
    return response


def _keystone_identify(request: flask.Request) -> dict[str, Any]:
    headers = request.headers
    if headers.get("X-Identity-Status") != "Confirmed":
        raise Unauthorized("Authentication required: a valid Keystone token is needed")
    roles = [r.strip() for r in headers.get("X-Roles", "").split(",") if r.strip()]
    extra = {key: headers.get(header) for key, header in IDENTITY_HEADERS.items()}
    return credentials(roles, **extra)


def _wrap_keystone(app: flask.Flask, conf: cfg.ConfigOpts, middleware_factory) -> None:
    # Imported here: it pulls in WebOb, oslo.cache and friends, which the other strategies
    # do not need.
    from keystonemiddleware import auth_token  # noqa: PLC0415
    from keystonemiddleware import exceptions as ksm_exceptions  # noqa: PLC0415

    factory = middleware_factory or auth_token.AuthProtocol
    options = {
        # auth_token registers [keystone_authtoken] on our ConfigOpts, not on the global one.
        "oslo_config_config": conf,
        "oslo_config_project": "inspector",
        # Forced, whatever the file says: public routes must pass without a token, and we
        # refuse the others ourselves once we know the route.
        "delay_auth_decision": True,
    }
    try:
        app.wsgi_app = factory(app.wsgi_app, options)
    except (ksm_exceptions.ConfigurationError, cfg.Error) as exc:
        raise ConfigError(f"[keystone_authtoken]: {exc}") from exc


def _authenticate(identify: Identify) -> None:
    """before_request hook: set flask.g.credentials, or refuse a protected route with 401."""
    endpoint = flask.request.endpoint
    if endpoint is None:
        # Routing failed: let Flask answer 404 or 405 rather than hide it behind a 401.
        return
    view = flask.current_app.view_functions.get(endpoint)
    if is_public(view):
        flask.g.credentials = _public_credentials()
        return
    flask.g.credentials = identify(flask.request)


def install(app: flask.Flask, conf: cfg.ConfigOpts, *, middleware_factory=None) -> None:
    """Set up conf.auth_strategy on the app.

    middleware_factory replaces keystonemiddleware's AuthProtocol (tests only); it is
    called as factory(wsgi_app, options).
    """
    strategy = conf.auth_strategy
    if strategy == "noauth":
        LOG.warning("auth_strategy is noauth: every API caller is an administrator")
        identify: Identify = _noauth
    elif strategy == "http_basic":
        http_basic.register(conf)
        users = htpasswd.UserFile(
            conf.http_basic_auth_user_file, conf[http_basic.GROUP].default_roles
        )
        identify = _basic_identify(users)
        app.after_request(_challenge)
    elif strategy == "keystone":
        _wrap_keystone(app, conf, middleware_factory)
        identify = _keystone_identify
    else:
        raise ConfigError(f"[DEFAULT] auth_strategy: unknown strategy {strategy!r}")
    app.before_request(lambda: _authenticate(identify))
