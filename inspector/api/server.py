"""A threaded WSGI server (cheroot) for `inspector api` and `inspector all`.

Production deployments may run `inspector.api.wsgi:application` under gunicorn instead.
"""

import logging
import threading

from cheroot import wsgi

from inspector.lifecycle import Lifecycle

LOG = logging.getLogger(__name__)

#: Request threads per API process.
THREADS = 16


class Server:
    """Listens at once on construction (so the port is known), serves until stopped."""

    def __init__(self, app, host: str, port: int, threads: int = THREADS) -> None:
        self._server = wsgi.Server((host, port), app, numthreads=threads)
        self._server.prepare()
        self.host, self.port = self._server.bind_addr[:2]
        self._thread = threading.Thread(target=self._server.serve, name="api-server", daemon=True)

    def start(self) -> None:
        LOG.info("API listening on http://%s:%s", self.host, self.port)
        self._thread.start()

    def stop(self) -> None:
        self._server.stop()
        self._thread.join(timeout=10)

    def serve_until(self, lifecycle: Lifecycle) -> None:
        """Serve until the shutdown flag is set or the server thread dies."""
        self.start()
        while not lifecycle.wait(0.5):
            if not self._thread.is_alive():
                lifecycle.stop("the API server stopped unexpectedly", exit_status=1)
        self.stop()
