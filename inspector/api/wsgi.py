"""WSGI entry point for gunicorn / uwsgi / mod_wsgi: `inspector.api.wsgi:application`.

The application is built on the first request, not at import, from the files named by
INSPECTOR_CONFIG_FILES (colon-separated; default /etc/inspector/inspector.conf when it
exists) and INSPECTOR_CONFIG_DIR, on the backends `inspector api` builds
(inspector.services). A bad configuration fails that first request loudly.
"""

import logging
import os
import threading
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from inspector import conf as config
from inspector import services
from inspector.api import app as app_factory
from inspector.api.logs import setup_logging
from inspector.lifecycle import Lifecycle, settle_heap

LOG = logging.getLogger(__name__)

DEFAULT_CONFIG_FILE = "/etc/inspector/inspector.conf"


def config_args(environ: dict[str, str]) -> list[str]:
    """oslo.config arguments from the INSPECTOR_CONFIG_FILES/_DIR environment."""
    files = [f for f in environ.get("INSPECTOR_CONFIG_FILES", "").split(":") if f]
    if not files and os.path.exists(DEFAULT_CONFIG_FILE):
        files = [DEFAULT_CONFIG_FILE]
    args = [arg for f in files for arg in ("--config-file", f)]
    if environ.get("INSPECTOR_CONFIG_DIR"):
        args += ["--config-dir", environ["INSPECTOR_CONFIG_DIR"]]
    return args


class LazyApplication:
    """A WSGI callable that builds the real Flask app once, on first use. The server
    (gunicorn) owns the signals: nothing sets `lifecycle`'s shutdown flag unless the
    embedding code does."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self._environ = environ
        self.lifecycle = Lifecycle()
        self._app: WSGIApplication | None = None
        self._lock = threading.Lock()

    def _build(self) -> WSGIApplication:
        with self._lock:
            if self._app is None:
                env = dict(os.environ if self._environ is None else self._environ)
                conf = config.load(config_args(env), default_config_files=[])
                setup_logging(conf)
                backends = services.build_services(conf, self.lifecycle)
                self._app = app_factory.create_app(
                    conf, store=backends.store, queue=backends.queue, ironic=backends.ironic
                )
                settle_heap()
        return self._app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        return (self._app or self._build())(environ, start_response)


application = LazyApplication()
