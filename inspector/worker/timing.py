"""Where a worker's time goes: wrappers that add the seconds its request threads spend in
each backend's calls (database, DLM, queue, Ironic) to its metrics.

Used only when the worker serves metrics. A wrapper passes every attribute through and
times the calls of public methods; the DLM's `try_lock` and `try_lease` are timed on
entering and leaving their context; the queue's `put` and the settling of a delivery
(ack, retry, dead-letter) are timed, not the wait for one, which is idle time.
"""

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

Record = Callable[[str, float], None]

DATABASE = "database"
DLM = "DLM"
QUEUE = "queue"
IRONIC = "Ironic"


class Timed:
    """`target` with each public method call timed as `backend`."""

    def __init__(self, target: Any, backend: str, record: Record) -> None:
        self._target = target
        self._backend = backend
        self._record = record

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if name.startswith("_") or not callable(value):
            return value
        timed = self._timed(value)
        setattr(self, name, timed)  # built once: later lookups find it without __getattr__
        return timed

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self._record(self._backend, time.perf_counter() - started)

        return timed


class TimedCoordinator(Timed):
    """The DLM: lock and lease contexts timed when entered and when left."""

    def __init__(self, target: Any, record: Record) -> None:
        super().__init__(target, DLM, record)

    def try_lock(self, *args: Any, **kwargs: Any) -> contextlib.AbstractContextManager:
        return self._context(self._target.try_lock(*args, **kwargs))

    def try_lease(self, *args: Any, **kwargs: Any) -> contextlib.AbstractContextManager:
        return self._context(self._target.try_lease(*args, **kwargs))

    @contextlib.contextmanager
    def _context(self, context: contextlib.AbstractContextManager) -> Iterator[Any]:
        started = time.perf_counter()
        try:
            value = context.__enter__()
        finally:
            self._record(DLM, time.perf_counter() - started)
        try:
            yield value
        except BaseException as exc:
            started = time.perf_counter()
            try:
                if not context.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            finally:
                self._record(DLM, time.perf_counter() - started)
        else:
            started = time.perf_counter()
            try:
                context.__exit__(None, None, None)
            finally:
                self._record(DLM, time.perf_counter() - started)


class TimedQueue(Timed):
    """The work queue: `put` and the settling of each delivery; not the wait in `get`."""

    def __init__(self, target: Any, record: Record) -> None:
        super().__init__(target, QUEUE, record)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        delivery = self._target.get(*args, **kwargs)
        return None if delivery is None else Timed(delivery, QUEUE, self._record)
