"""Coalescing concurrent single-row reads into one statement: while one read is in flight,
the reads that arrive meanwhile wait and then go together (smart batching, as a group
commit does for writes).

A process answering many status reads at once then pays one database round trip for
several of them, and a lone read runs at once, as before. A read never joins a
statement that began before it arrived, so it sees every write committed before it was
asked: read-after-write holds across processes, as with one statement per read.
"""

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

#: Keys in one statement at most; the rest go in the next one.
MAX_BATCH = 64

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Waiter(Generic[K, V]):
    __slots__ = ("_woken", "done", "error", "key", "value")

    def __init__(self, key: K) -> None:
        self.key = key
        # A bare lock, held from the start: wake() releases it and wait() returns. Far
        # cheaper than an Event (a Condition, its lock and a list) on this hot path.
        self._woken = threading.Lock()
        self._woken.acquire()
        self.done = False
        self.value: V | None = None
        self.error: BaseException | None = None

    def wait(self) -> None:
        self._woken.acquire()

    def wake(self) -> None:
        self._woken.release()

    def outcome(self) -> V | None:
        if self.error is not None:
            raise self.error
        return self.value


class Coalescer(Generic[K, V]):
    """`get(key)` is `fetch([key]).get(key)`, with concurrent keys fetched together.

    `fetch` answers a dict of the keys it found (missing ones are answered None). The
    thread that finds nothing in flight leads: it runs the statement for everything
    pending, hands the lead to the first read that arrived meanwhile, then answers. No
    thread polls and none runs statements for reads that arrive after its own is answered.
    """

    def __init__(
        self, fetch: Callable[[Sequence[K]], dict[K, V]], max_batch: int = MAX_BATCH
    ) -> None:
        self._fetch = fetch
        self._max_batch = max_batch
        self._lock = threading.Lock()
        #: Reads waiting for the next statement, in arrival order.
        self._pending: list[_Waiter[K, V]] = []
        #: A statement is in flight, or a successor has been told to run the next one.
        self._leading = False
        #: Statements run and reads they answered (the tests read them).
        self.statements = 0
        self.reads = 0

    def get(self, key: K) -> V | None:
        waiter: _Waiter[K, V] = _Waiter(key)
        with self._lock:
            self._pending.append(waiter)
            lead = not self._leading
            self._leading = True
        if not lead:
            waiter.wait()
            if waiter.done:
                return waiter.outcome()
        self._run()
        return waiter.outcome()

    def _run(self) -> None:
        """Fetch the pending batch (the caller's read is its first), answer it, and
        pass the lead on."""
        with self._lock:
            leader = self._pending[0]
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
        keys = list(dict.fromkeys(waiter.key for waiter in batch))
        error: BaseException | None = None
        found: dict[K, V] = {}
        try:
            found = self._fetch(keys)
        except BaseException as exc:  # every waiter re-raises it in its own thread
            error = exc
        with self._lock:
            self.statements += 1
            self.reads += len(batch)
            successor = self._pending[0] if self._pending else None
            if successor is None:
                self._leading = False
        for waiter in batch:
            waiter.error = error
            waiter.value = found.get(waiter.key)
            waiter.done = True
            if waiter is not leader:
                waiter.wake()
        if successor is not None:
            successor.wake()
