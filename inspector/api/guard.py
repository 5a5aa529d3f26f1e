"""/v1/continue's door: an optional allow-list of source networks and a per-source rate
limit (a token bucket per address, in this process). No I/O."""

import ipaddress
import math
import threading
import time
from collections.abc import Callable

from inspector.errors import Forbidden, TooManyRequests

#: Sources remembered at most; the stalest are forgotten first.
MAX_SOURCES = 10_000


class RateLimited(TooManyRequests):
    """Over the rate: `retry_after` is the whole seconds until the source's next token
    (the answer's Retry-After)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Guard:
    def __init__(
        self,
        networks: list[str],
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.networks = [ipaddress.ip_network(n.strip(), strict=False) for n in networks if n]
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)
        self._lock = threading.Lock()

    def check(self, address: str | None) -> None:
        """Forbidden outside the allowed networks, TooManyRequests over the rate."""
        if self.networks and not self._allowed(address):
            raise Forbidden(f"/v1/continue is not accepted from {address}")
        wait = self._take(address or "unknown") if self.per_minute else 0.0
        if wait:
            raise RateLimited(
                f"Too many /v1/continue requests from {address}: at most "
                f"{self.per_minute} per minute",
                retry_after=max(1, math.ceil(wait)),
            )

    def _allowed(self, address: str | None) -> bool:
        try:
            ip = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def _take(self, address: str) -> float:
        """Take a token of address's bucket: 0.0 when there was one, else the seconds
        until there is."""
        now = self.clock()
        rate = self.per_minute / 60.0
        with self._lock:
            tokens, at = self._buckets.pop(address, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - at) * rate)
            allowed = tokens >= 1.0
            self._buckets[address] = (tokens - 1.0 if allowed else tokens, now)
            if len(self._buckets) > MAX_SOURCES:
                del self._buckets[next(iter(self._buckets))]
            return 0.0 if allowed else (1.0 - tokens) / rate
