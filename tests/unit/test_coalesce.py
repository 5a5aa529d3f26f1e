"""The read coalescer: concurrent reads share a statement, never one that began before
they arrived; errors reach every read of their statement; the lead passes on."""

import threading
import time

from inspector.store.coalesce import Coalescer

#: Seconds a test waits for its threads at most (a bound, not a pause).
DEADLINE = 10


class GatedFetch:
    """A fetch that blocks each statement until the test opens its gate."""

    def __init__(self, rows=None, fail_on=()):
        self.rows = rows if rows is not None else {}
        self.fail_on = set(fail_on)
        self.calls: list[list] = []
        self.started = threading.Semaphore(0)
        self.gates: list[threading.Event] = []
        self._lock = threading.Lock()

    def __call__(self, keys):
        gate = threading.Event()
        with self._lock:
            self.calls.append(list(keys))
            self.gates.append(gate)
        self.started.release()
        assert gate.wait(DEADLINE), "the test never opened this statement's gate"
        if self.fail_on & set(keys):
            raise RuntimeError(f"database unavailable for {sorted(keys)}")
        return {key: self.rows[key] for key in keys if key in self.rows}

    def wait_started(self):
        assert self.started.acquire(timeout=DEADLINE), "no statement started"

    def open(self, index):
        self.gates[index].set()


class Reader(threading.Thread):
    def __init__(self, coalescer, key):
        super().__init__(daemon=True)
        self.coalescer, self.key = coalescer, key
        self.value = self.error = None

    def run(self):
        try:
            self.value = self.coalescer.get(self.key)
        except Exception as exc:  # recorded for the assertion
            self.error = exc

    def finish(self):
        self.join(DEADLINE)
        assert not self.is_alive(), f"the read of {self.key} never returned"
        return self


def wait_pending(coalescer, count):
    """Until `count` reads wait for the next statement (polled, with a deadline)."""
    deadline = time.monotonic() + DEADLINE
    while len(coalescer._pending) < count:
        assert time.monotonic() < deadline, f"{count} reads never queued"
        time.sleep(0.001)


def test_a_lone_read_runs_at_once():
    coalescer = Coalescer(lambda keys: {key: key.upper() for key in keys})
    assert coalescer.get("a") == "A"
    assert (coalescer.statements, coalescer.reads) == (1, 1)


def test_a_missing_key_reads_none():
    coalescer = Coalescer(lambda keys: {})
    assert coalescer.get("a") is None


def test_reads_arriving_during_a_statement_share_the_next_one():
    fetch = GatedFetch(rows={"a": 1, "b": 2, "c": 3})
    coalescer = Coalescer(fetch)
    first = Reader(coalescer, "a")
    first.start()
    fetch.wait_started()
    # b and c arrive while a's statement is in flight: they must not join it (it may
    # have read the row before a write that b's caller saw committed).
    later = [Reader(coalescer, "b"), Reader(coalescer, "c"), Reader(coalescer, "b")]
    for reader in later:
        reader.start()
    wait_pending(coalescer, 3)
    fetch.open(0)
    assert first.finish().value == 1
    fetch.wait_started()
    fetch.open(1)
    assert [reader.finish().value for reader in later] == [2, 3, 2]
    assert fetch.calls == [["a"], ["b", "c"]]  # each key once
    assert (coalescer.statements, coalescer.reads) == (2, 4)


def test_an_error_reaches_every_read_of_its_statement_and_the_next_still_runs():
    fetch = GatedFetch(rows={"a": 1, "b": 2, "c": 3}, fail_on={"b"})
    coalescer = Coalescer(fetch)
    first = Reader(coalescer, "a")
    first.start()
    fetch.wait_started()
    failing = [Reader(coalescer, "b"), Reader(coalescer, "c")]
    for reader in failing:
        reader.start()
    wait_pending(coalescer, 2)
    fetch.open(0)
    first.finish()
    fetch.wait_started()
    last = Reader(coalescer, "a")
    last.start()
    wait_pending(coalescer, 1)
    fetch.open(1)
    for reader in failing:
        assert isinstance(reader.finish().error, RuntimeError)
    fetch.wait_started()
    fetch.open(2)
    assert last.finish().value == 1
    assert fetch.calls == [["a"], ["b", "c"], ["a"]]


def test_a_statement_carries_at_most_max_batch_keys():
    fetch = GatedFetch(rows={key: key for key in "abcde"})
    coalescer = Coalescer(fetch, max_batch=2)
    first = Reader(coalescer, "a")
    first.start()
    fetch.wait_started()
    later = [Reader(coalescer, key) for key in "bcde"]
    for reader in later:
        reader.start()
        wait_pending(coalescer, later.index(reader) + 1)  # in this order
    fetch.open(0)
    for index in (1, 2):
        fetch.wait_started()
        fetch.open(index)
    assert [reader.finish().value for reader in later] == list("bcde")
    assert fetch.calls == [["a"], ["b", "c"], ["d", "e"]]


def test_after_the_last_statement_the_next_read_leads_again():
    coalescer = Coalescer(lambda keys: dict.fromkeys(keys, 0))
    for _ in range(3):
        assert coalescer.get("a") == 0
    assert not coalescer._leading
    assert coalescer._pending == []


def test_many_threads_each_get_their_own_key():
    coalescer = Coalescer(lambda keys: {key: key * 2 for key in keys})
    threads = [Reader(coalescer, index % 16) for index in range(200)]
    for reader in threads:
        reader.start()
    assert all(reader.finish().value == reader.key * 2 for reader in threads)
    assert coalescer.reads == len(threads)
