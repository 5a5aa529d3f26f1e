"""The Ironic client built on first use, so that a process whose [ironic] options are
missing still starts and serves everything that does not need Ironic; what does need it
fails with 503 naming the options to set."""

import threading
from collections.abc import Callable
from typing import TypeVar

from oslo_config import cfg

from inspector.errors import ConfigError, ServiceUnavailable
from inspector.ironic import IronicClient
from inspector.ironic.client import Ironic
from inspector.ironic.forwarding import Forwarding

T = TypeVar("T")


class LazyIronic(Forwarding):
    """IronicClient: each call goes to the one `Ironic` of the process, built by the first."""

    def __init__(self, conf: cfg.ConfigOpts, *, shutdown: threading.Event | None = None) -> None:
        self._conf = conf
        self._shutdown = shutdown
        self._client: Ironic | None = None
        self._lock = threading.Lock()

    def check(self) -> str | None:
        """None when the client can be built, else why not (for a start-up warning)."""
        try:
            self.client()
        except ServiceUnavailable as exc:
            return exc.message
        return None

    def client(self) -> Ironic:
        """The client; ServiceUnavailable naming what to set when [ironic] cannot build one."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                try:
                    self._client = Ironic(self._conf, shutdown=self._shutdown)
                except ConfigError as exc:
                    raise ServiceUnavailable(f"Ironic is not configured: {exc.message}") from exc
            return self._client

    def _run(self, call: Callable[[IronicClient], T]) -> T:
        return call(self.client())
