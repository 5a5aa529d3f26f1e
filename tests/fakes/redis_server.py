"""A Redis server inside the test process: fakeredis's TCP server (Lua scripts through
lupa), which tooz's and kombu's Redis clients reach as they reach a real one.

fakeredis has no INFO command, which tooz's Redis driver sends once when it starts (to
learn the server's version): while the server runs, this process's redis-py clients
answer it themselves with the version fakeredis emulates. A client in another process
would not, so tooz cannot start there against this server.
"""

import contextlib
import threading
from collections.abc import Iterator

import pytest
import redis
from fakeredis import TcpFakeServer

#: What INFO answers (the fields tooz reads).
INFO = {"redis_version": "8.0.0"}


class _Server(TcpFakeServer):
    # Clients that keep their connection open (kombu's pool, a killed process's) must
    # not hold up the end of a test.
    daemon_threads = True
    block_on_close = False


@contextlib.contextmanager
def fake_redis() -> Iterator[str]:
    """The URL of a fresh, empty fake Redis, served until the block ends."""
    server = _Server(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, name="fake-redis", daemon=True)
    thread.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(redis.Redis, "info", lambda self, *args, **kwargs: dict(INFO))
            yield f"redis://127.0.0.1:{server.server_address[1]}/0"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
