"""One suite for the coordinator's locks, run on every backend: in-process and tooz/Redis."""

import threading
import time
import uuid

import pytest

from inspector.coordination import connect
from inspector.errors import ServiceUnavailable


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def url(request):
    if request.param == "memory":
        return "memory://"
    base = request.getfixturevalue("redis_url").split("/0")[0]
    return f"{base}?timeout=5"


@pytest.fixture
def coordinators(url):
    """Two members of the same DLM (for memory://, the same process table)."""
    first = connect(url, f"a-{uuid.uuid4().hex[:6]}")
    second = first if url.startswith("memory") else connect(url, f"b-{uuid.uuid4().hex[:6]}")
    first.start()
    second.start()
    yield first, second
    first.stop()
    second.stop()


def test_a_held_lock_excludes_others(coordinators):
    first, second = coordinators
    name = f"node-{uuid.uuid4()}"
    with first.try_lock(name) as held:
        assert held
        with second.try_lock(name) as other:
            assert not other
    with second.try_lock(name) as again:
        assert again


def test_different_names_do_not_conflict(coordinators):
    first, second = coordinators
    with first.try_lock(f"a-{uuid.uuid4()}") as one, second.try_lock(f"b-{uuid.uuid4()}") as two:
        assert one and two


def test_lock_is_released_when_the_block_raises(coordinators):
    first, second = coordinators
    name = f"node-{uuid.uuid4()}"
    with pytest.raises(KeyError), first.try_lock(name):
        raise KeyError("boom")
    with second.try_lock(name) as held:
        assert held


def test_only_one_of_many_threads_holds_it(coordinators):
    first, _ = coordinators
    name = f"node-{uuid.uuid4()}"
    contenders = 8
    barrier = threading.Barrier(contenders)
    results = []
    lock = threading.Lock()
    all_tried = threading.Event()

    def contend():
        barrier.wait()
        with first.try_lock(name) as held:
            with lock:
                results.append(held)
                if len(results) == contenders:
                    all_tried.set()
            if held:
                # Hold it until every other thread has tried.
                all_tried.wait(10)

    threads = [threading.Thread(target=contend) for _ in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert len(results) == contenders
    assert results.count(True) == 1


def test_flags_say_what_the_backend_can_do(url):
    coordinator = connect(url, "flags")
    assert coordinator.is_single_process == url.startswith("memory")


def test_unreachable_dlm_fails_after_its_retries():
    shutdown = threading.Event()
    coordinator = connect(
        "redis://127.0.0.1:1?timeout=1", "x", max_retries=1, retry_interval=0.01, shutdown=shutdown
    )
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="DLM"):
        coordinator.start()
    # Our retry policy decides, not tooz's or redis-py's hidden ones (a minute per call).
    assert time.monotonic() - started < 10
