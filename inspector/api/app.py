"""The Flask application factory: wires configuration, hooks, error mapping and blueprints.

No module-level app: `create_app(conf)` builds a new one each time.
"""

import flask
from oslo_config import cfg

from inspector.api import errors, root, versions

#: Largest request body accepted; ramdisk payloads of big servers are well under it.
MAX_BODY_BYTES = 10 * 1024 * 1024


def create_app(conf: cfg.ConfigOpts) -> flask.Flask:
    app = flask.Flask("inspector.api")
    app.config["INSPECTOR_CONF"] = conf
    app.config["INSPECTOR_DEBUG"] = conf.debug
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json.sort_keys = False
    app.url_map.strict_slashes = False
    app.before_request(versions.negotiate)
    app.after_request(versions.stamp)
    errors.register(app)
    app.register_blueprint(root.blueprint)
    return app
