"""The time a thread spends in each backend (database, DLM, queue, Ironic), for the
worker's metrics: each backend's client times its calls at one point (`timing`), and a
thread whose time is wanted binds a recorder (`recorded`); elsewhere nothing is timed.

A context variable, as inspector.deadlines: the worker's request threads bind the
recorder, so that the API's threads, the elections and the watchdog of the same process
are not counted. A timed call that makes another (a retry's reconnection...) counts once.
"""

import contextlib
import contextvars
import functools
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_T = TypeVar("_T")

#: Takes a backend's name and the seconds one call to it took.
Record = Callable[[str, float], None]

#: The backends' names: the `backend` label of the worker's metrics, as the `service`
#: of their ServiceUnavailable errors.
DATABASE = "database"
DLM = "DLM"
QUEUE = "queue"
IRONIC = "Ironic"

_RECORD: contextvars.ContextVar[Record | None] = contextvars.ContextVar(
    "inspector_backend_time", default=None
)
#: What `timing` returns when nothing is recorded: reusable, and nearly free.
_UNTIMED = contextlib.nullcontext()


@contextlib.contextmanager
def recorded(record: Record | None) -> Iterator[None]:
    """Within the block, this thread's backend calls are handed to `record` (None:
    nothing is recorded)."""
    token = _RECORD.set(record)
    try:
        yield
    finally:
        _RECORD.reset(token)


def timing(backend: str) -> contextlib.AbstractContextManager[None]:
    """A call to `backend` for the block: its seconds are recorded when this thread
    binds a recorder, and the calls it makes inside are not counted again."""
    record = _RECORD.get()
    return _UNTIMED if record is None else _Timing(backend, record)


def timed(backend: str) -> Callable[[Callable[_P, _T]], Callable[_P, _T]]:
    """Decorates a function whose every run is one call to `backend` (see `timing`)."""

    def decorate(function: Callable[_P, _T]) -> Callable[_P, _T]:
        @functools.wraps(function)
        def timed_function(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            with timing(backend):
                return function(*args, **kwargs)

        return timed_function

    return decorate


class _Timing:
    """One timed call: no recorder inside it, its seconds recorded when it ends."""

    def __init__(self, backend: str, record: Record) -> None:
        self._backend = backend
        self._record = record
        self._token: contextvars.Token[Record | None] | None = None
        self._started = 0.0

    def __enter__(self) -> None:
        self._token = _RECORD.set(None)  # an inner call is part of this one
        self._started = time.perf_counter()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        seconds = time.perf_counter() - self._started
        if self._token is not None:
            _RECORD.reset(self._token)
        self._record(self._backend, seconds)
