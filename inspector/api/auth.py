"""API authentication: who the caller is (noauth, http_basic, keystone), as an oslo.context
RequestContext on flask.g.context and its policy values on flask.g.credentials.

Routes marked @public need no credentials. What a caller may do is decided by policy.py, not here.
"""

import logging
from collections.abc import Callable
from typing import Any, TypeVar
from wsgiref.types import WSGIApplication

import flask
from oslo_config import cfg
from oslo_context import context as oslo_context

from inspector.api import errors, htpasswd
from inspector.api.keystone import keystone_problems
from inspector.conf import http_basic
from inspector.errors import ConfigError, Unauthorized

LOG = logging.getLogger(__name__)

#: Attribute that @public sets on a view function.
PUBLIC_MARKER = "inspector_public_api"

#: Realm of the HTTP basic challenge.
REALM = "inspector"
#: Every 401's message: ironic-inspector's (utils.check_auth), whatever was missing or
#: wrong (the log says which).
AUTHENTICATION_REQUIRED = "Authentication required"

#: The 503's message when the middleware fails at run time.
KEYSTONE_FAILED = "Authentication is unavailable: Keystone's middleware failed; see the service log"

#: What http_basic and noauth callers are: users of the whole deployment (there are no
#: projects without Keystone), so their roles count as a system-scoped token's would.
SYSTEM_SCOPE = "all"


class RequestContext(oslo_context.RequestContext):
    """oslo.context's request context, with ironic-inspector's `is_public_api` policy value.

    Never oslo.context's thread-local "current" context (which overwrite=False alone
    still fills when it is empty): that one would outlive the request on the server's
    thread.
    """

    def __init__(self, is_public_api: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("overwrite", False)
        super().__init__(**kwargs)
        self.is_public_api = is_public_api

    def update_store(self) -> None:
        """Not the thread store: flask.g.context is the request's."""

    def to_policy_values(self) -> dict[str, Any]:
        """oslo.context's values (roles, system_scope, service_roles, is_admin_project...)
        as a plain dict, with is_public_api and, as Ironic's, project_name (for a rule
        such as `role:service and project_name:service`): the credentials rules see."""
        return {
            **super().to_policy_values(),
            "project_name": self.project_name,
            "is_public_api": self.is_public_api,
        }


Identify = Callable[[flask.Request], RequestContext]
#: keystonemiddleware's AuthProtocol or a test's stand-in, called as factory(app, options).
MiddlewareFactory = Callable[[WSGIApplication, dict[str, Any]], WSGIApplication]
_View = TypeVar("_View", bound=Callable[..., Any])


def public(view: _View) -> _View:
    """Decorator: the view needs no credentials (API roots, the ramdisk's /v1/continue)."""
    setattr(view, PUBLIC_MARKER, True)
    return view


def is_public(view: object) -> bool:
    return getattr(view, PUBLIC_MARKER, False) is True


def _public_context(_request: flask.Request) -> RequestContext:
    """Whoever calls a public route: no identity, even with a token."""
    return RequestContext(is_public_api=True)


def _noauth(_request: flask.Request) -> RequestContext:
    return RequestContext(roles=["admin"], system_scope=SYSTEM_SCOPE, is_admin=True)


def _basic_identify(users: htpasswd.UserFile) -> Identify:
    def identify(request: flask.Request) -> RequestContext:
        # Werkzeug answers None for a missing, non-Basic or undecodable header.
        auth = request.authorization
        if auth is None or auth.type != "basic" or not auth.username:
            raise Unauthorized(AUTHENTICATION_REQUIRED)
        user = users.authenticate(auth.username, auth.password or "")
        if user is None:
            LOG.info(
                "Wrong HTTP basic credentials for user %s on %s %s",
                auth.username,
                request.method,
                request.path,
            )
            raise Unauthorized(AUTHENTICATION_REQUIRED)  # why: in the log line above
        return RequestContext(
            user_id=user.name,
            user_name=user.name,
            roles=list(user.roles),
            system_scope=SYSTEM_SCOPE,
        )

    return identify


def _challenge(response: flask.Response) -> flask.Response:
    """after_request hook: a 401 tells the client to use HTTP basic auth."""
    if response.status_code == 401:
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
    return response


def _keystone_identify(request: flask.Request) -> RequestContext:
    # The identity headers (X-Roles, X-Project-Id, OpenStack-System-Scope, X-Service-Roles,
    # X-Is-Admin-Project...) are keystonemiddleware's: auth_token strips or overwrites any
    # copy the client sent, and X-Identity-Status says whether it validated a token.
    if request.headers.get("X-Identity-Status") != "Confirmed":
        raise Unauthorized(AUTHENTICATION_REQUIRED)
    return RequestContext.from_environ(request.environ)


def _wrap_keystone(
    app: flask.Flask, conf: cfg.ConfigOpts, middleware_factory: MiddlewareFactory | None
) -> None:
    from keystonemiddleware import auth_token  # noqa: PLC0415
    from keystonemiddleware import exceptions as ksm_exceptions  # noqa: PLC0415

    problems = keystone_problems(conf)
    if problems:
        raise ConfigError("\n".join(problems))
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
        middleware = factory(app.wsgi_app, options)
    except (ksm_exceptions.ConfigurationError, cfg.Error) as exc:
        raise ConfigError(f"[keystone_authtoken]: {exc}") from exc
    # What it raises (a catalog without an identity endpoint, a URI for its 401 it cannot
    # find) happens outside Flask: an answer in our format, not the server's empty 500.
    # (Keystone unreachable is not one: it defers, and the request gets our 401.)
    app.wsgi_app = errors.Shield(  # type: ignore[method-assign]  # Flask's way to add middleware
        middleware, 503, KEYSTONE_FAILED, "the authentication middleware"
    )


def _authenticate(identify: Identify) -> None:
    """before_request hook: set flask.g.context (the caller's RequestContext) and
    flask.g.credentials (its policy values), or refuse a protected route with 401."""
    endpoint = flask.request.endpoint
    if endpoint is None:
        # Routing failed: let Flask answer 404 or 405 rather than hide it behind a 401.
        return
    view = flask.current_app.view_functions.get(endpoint)
    context = (_public_context if is_public(view) else identify)(flask.request)
    flask.g.context = context
    flask.g.credentials = context.to_policy_values()


def install(
    app: flask.Flask, conf: cfg.ConfigOpts, *, middleware_factory: MiddlewareFactory | None = None
) -> None:
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
