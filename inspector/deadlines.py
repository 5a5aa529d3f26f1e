"""The deadline of the request a thread works for: by when its answer must be on its way.

The API binds one per HTTP request (`[api] request_timeout`); the backends' clients read
it, so that no call, and no retry, starts once the request can no longer wait for it, and
an Ironic call waits at most what is left. Outside a request (a worker, a periodic task,
a command) there is none: each backend's own bounds apply alone. A context variable, set
for the call and reset after it, as inspector.request_context's.
"""

import contextlib
import contextvars
import dataclasses
import time
from collections.abc import Callable, Iterator

from inspector.errors import ServiceUnavailable

Clock = Callable[[], float]

_CURRENT: contextvars.ContextVar["Deadline | None"] = contextvars.ContextVar(
    "inspector_deadline", default=None
)


@dataclasses.dataclass(frozen=True)
class Deadline:
    """`at` on `clock`'s scale (time.monotonic's by default)."""

    at: float
    clock: Clock = time.monotonic

    def remaining(self) -> float:
        return self.at - self.clock()


@contextlib.contextmanager
def bound(seconds: float, clock: Clock = time.monotonic) -> Iterator[Deadline]:
    """The current request must be answered within `seconds` from now, until the block
    ends (a deadline already bound and earlier stays)."""
    deadline = Deadline(clock() + seconds, clock)
    outer = _CURRENT.get()
    if outer is not None and outer.at <= deadline.at:
        deadline = outer
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def remaining() -> float | None:
    """Seconds left to the current request's deadline (negative: passed); None: none."""
    deadline = _CURRENT.get()
    return None if deadline is None else deadline.remaining()


def check(service: str) -> None:
    """ServiceUnavailable when the current request's deadline has passed: a call to
    `service` that it would start now could only answer after the request gave up."""
    left = remaining()
    if left is not None and left <= 0:
        raise ServiceUnavailable(
            f"{service} unavailable: no answer within the request's time limit", service=service
        )


def cap(seconds: float, service: str) -> float:
    """`seconds`, or what is left to the current request's deadline when less;
    ServiceUnavailable (see `check`) once it has passed."""
    check(service)
    left = remaining()
    return seconds if left is None else min(seconds, left)
