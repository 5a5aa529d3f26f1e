"""The Flask application factory: wires configuration, services, hooks, error mapping and
blueprints. No module-level app: `create_app(conf, ...)` builds a new one each time, on the
backends it is given.
"""

from collections.abc import Callable
from typing import Any
from wsgiref.types import WSGIApplication

import flask
from oslo_config import cfg
from werkzeug.middleware.proxy_fix import ProxyFix

from inspector.api import (
    auth,
    bodies,
    deadline,
    errors,
    health,
    history,
    introspection,
    metrics,
    ramdisk,
    report,
    request_ids,
    root,
    rules,
    versions,
)
from inspector.api.context import EXTENSION, Services
from inspector.api.guard import Guard
from inspector.api.policy import API_RECHECK_INTERVAL, Policy
from inspector.broker import Publisher
from inspector.ironic import IronicClient
from inspector.store import Store


class InspectorFlask(flask.Flask):
    """Flask, asking once per view or hook whether it is a coroutine function: Flask's
    own `ensure_sync` inspects every one on every call, several times a request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._synchronous: dict[Callable[..., Any], Callable[..., Any]] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        sync = self._synchronous.get(func)
        if sync is None:
            sync = self._synchronous[func] = super().ensure_sync(func)
        return sync


def create_app(
    conf: cfg.ConfigOpts,
    *,
    store: Store,
    queue: Publisher,
    ironic: IronicClient,
) -> flask.Flask:
    """The WSGI app on the process's backends (inspector.services.build_services, or
    tests' doubles)."""
    app = InspectorFlask("inspector.api")
    app.config["INSPECTOR_DEBUG"] = conf.debug
    # The body limit of every route but /v1/continue, whose view sets its own (larger:
    # ramdisk logs) before reading the body; werkzeug refuses more with 413.
    app.config["MAX_CONTENT_LENGTH"] = conf.api.max_request_body_size
    app.json.sort_keys = False  # type: ignore[attr-defined]  # Flask's DefaultJSONProvider
    app.url_map.strict_slashes = False
    # Innermost: the time a request may spend on the backends starts with the view.
    # (Flask's way to add WSGI middleware is to assign its `wsgi_app` method.)
    bounded = deadline.Bounded(app.wsgi_app, conf.api.request_timeout)
    app.wsgi_app = bounded  # type: ignore[method-assign]  # see above
    app.extensions[EXTENSION] = Services(
        conf=conf,
        store=store,
        queue=queue,
        ironic=ironic,
        policy=Policy(conf, recheck_interval=API_RECHECK_INTERVAL),
        guard=Guard(conf.api.continue_allowed_networks, conf.api.continue_rate_limit),
    )
    # First: a request refused by a later hook is logged with its node.
    app.before_request(request_ids.name_node)
    app.before_request(versions.negotiate)
    # Inside the version stamp (its answers name the versions too).
    bodies_bounded = bodies.BoundedBodies(
        app.wsgi_app, conf.api.max_request_body_size, conf.api.max_continue_body_size
    )
    app.wsgi_app = bodies_bounded  # type: ignore[method-assign]  # see above
    errors.register(app)
    for blueprint in (root, introspection, history, rules, report, ramdisk, health):
        app.register_blueprint(blueprint.blueprint)
    metrics.install(app)
    auth.install(app, conf)
    app.before_request(request_ids.name_caller)  # after authentication's hook
    # Outside authentication's middleware: its failures are answered in our format too.
    wrapped: WSGIApplication = errors.Shield(
        app.wsgi_app, 500, errors.GENERIC_MESSAGE, "a middleware"
    )
    wrapped = versions.Stamp(wrapped)
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        wrapped = ProxyFix(wrapped, x_for=1, x_proto=1, x_host=1, x_port=1, x_prefix=1)
    app.wsgi_app = request_ids.install(wrapped, conf)  # type: ignore[method-assign,assignment]
    return app
