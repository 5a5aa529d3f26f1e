"""A threaded WSGI server (cheroot) for `inspector api` and `inspector all`.

Production deployments may run `inspector.api.wsgi:application` under gunicorn instead.
"""

import logging
import threading
from collections.abc import Iterator

from cheroot import server as cheroot_server
from cheroot import wsgi

from inspector.lifecycle import Lifecycle

LOG = logging.getLogger(__name__)

#: Request threads per API process.
THREADS = 16


def chunks(stream) -> Iterator[bytes] | None:
    """The chunks of a chunked body as cheroot decodes them, one at a time; None when
    `stream` is not cheroot's chunked reader (gunicorn's, a test's).

    cheroot's own `ChunkedRFile.read(n)` copies what it holds on every call: one large
    chunk read n bytes at a time costs its size squared (a 60 MB chunk took 27 s). Its
    `_fetch` and `buffer` are private: this is the one place that uses them, and
    tests/unit/test_api_hostile_framing.py fails if cheroot changes them."""
    if not isinstance(stream, cheroot_server.ChunkedRFile):
        return None
    fetch = getattr(stream, "_fetch", None)
    if fetch is None or not isinstance(getattr(stream, "buffer", None), bytes):
        return None

    def decoded() -> Iterator[bytes]:
        while True:
            if not stream.buffer:
                fetch()
                if not stream.buffer:
                    return
            chunk, stream.buffer = stream.buffer, b""
            yield chunk

    return decoded()


class Server:
    """Listens at once on construction (so the port is known), serves until stopped."""

    def __init__(
        self, app, host: str, port: int, threads: int = THREADS, max_body_size: int = 0
    ) -> None:
        # max_body_size: cheroot refuses a chunk that would take the body past it before
        # reading the chunk (the API's own limits are checked in inspector.api.bodies).
        self._server = wsgi.Server((host, port), app, numthreads=threads)
        self._server.max_request_body_size = max_body_size
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
