"""The retry policy of the queue's links (inspector.broker.links), on fake links: a
pooled link found dead is replaced at once, other failures back off, and a call with a
budget ends within it. The real brokers: tests/integration/test_broker_restart.py and
test_broker_drop.py."""

import contextlib
import socket
import threading
import time
import uuid

import pytest

from inspector import deadlines
from inspector.broker import channels, links
from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from inspector.errors import ServiceUnavailable

#: Seconds a call that waits for nothing surely takes less than.
SOON = 0.5


class FakeLink:
    """A link whose opening, staleness and operations the test decides."""

    recoverable_errors = (OSError,)
    library_errors = (OSError, ValueError)

    def __init__(self, broker: "FakeBroker") -> None:
        self.broker = broker
        self.thread = threading.current_thread()
        self.is_open = False
        self.is_closed = False

    def open(self, within: float | None = None) -> None:
        self.broker.opened.append(within)
        if self.broker.refusing:
            raise ConnectionRefusedError("refused")
        self.is_open = True

    def is_stale(self) -> bool:
        return self.broker.stale_links.pop(0) if self.broker.stale_links else False

    def bounded(self, within: float | None) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def abandon(self) -> None:
        self.is_closed = True

    def close(self) -> None:
        self.is_closed = True


class FakeBroker:
    def __init__(self) -> None:
        self.refusing = False
        self.stale_links: list[bool] = []
        self.opened: list[float | None] = []


@pytest.fixture
def broker(monkeypatch) -> FakeBroker:
    fake = FakeBroker()
    monkeypatch.setattr(links, "Link", lambda *args, **kwargs: FakeLink(fake))
    return fake


def make_links(*, attempts: int = 10, retry_interval: float = 30.0) -> links.Links:
    return links.Links(
        "amqp://127.0.0.1:1//",
        "q",
        ("q",),
        attempts=attempts,
        retry_interval=retry_interval,
        shutdown=threading.Event(),
        visibility_timeout=300,
    )


def test_a_pooled_link_that_fails_is_replaced_at_once(broker):
    pool = make_links()
    assert pool.run("use", lambda link: link) is not None
    used = []

    def operation(link):
        used.append(link)
        if len(used) == 1:
            raise ConnectionResetError("Connection reset by peer")
        return "done"

    started = time.monotonic()
    assert pool.run("publish to", operation) == "done"
    assert time.monotonic() - started < SOON  # not after retry_interval (30 s)
    assert used[0] is not used[1] and used[0].is_closed
    assert len(broker.opened) == 2


def test_a_stale_link_is_replaced_before_use(broker):
    pool = make_links()
    first = pool.run("use", lambda link: link)
    broker.stale_links = [True]
    started = time.monotonic()
    second = pool.run("use", lambda link: link)
    assert time.monotonic() - started < SOON
    assert second is not first and first.is_closed and second.is_open


def test_a_new_link_that_fails_backs_off_and_counts(broker):
    broker.refusing = True
    pool = make_links(attempts=2, retry_interval=0.2)
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="after 2 attempts") as raised:
        pool.run("publish to", lambda link: None)
    assert 0.2 <= time.monotonic() - started < 0.2 + SOON
    assert raised.value.service == "queue"


def test_a_budget_ends_the_retries_and_bounds_the_connection(broker):
    broker.refusing = True
    pool = make_links(attempts=1000, retry_interval=0.1)
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable):
        pool.run("publish to", lambda link: None, budget=0.5)
    # Without the budget, 1,000 attempts 0.1 s apart; with it, about 0.5 s (a busy
    # machine's scheduling on top: some slack, far below what the attempts would take).
    assert time.monotonic() - started <= 0.5 + SOON
    assert all(within is not None and within <= 0.5 for within in broker.opened)
    assert len(broker.opened) >= 2  # retried (about five on an idle machine)


def test_a_pooled_link_failing_without_time_left_is_not_retried(broker):
    pool = make_links()
    pool.run("use", lambda link: link)

    def timed_out(link):
        raise TimeoutError("timed out")

    # A budget spent before the failure is seen (a read that timed out at its end).
    with pytest.raises(ServiceUnavailable, match="timed out"):
        pool.run("publish to", timed_out, budget=1e-6)
    assert len(broker.opened) == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # oslo.messaging's imports
def test_an_announcement_never_waits_for_a_hung_broker():
    """A broker that accepts connections and never answers: publish returns at once (the
    sending thread waits, not the caller)."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)  # never accepted: the AMQP handshake hangs
        port = hung.getsockname()[1]
        channel = channels.MessagingChannel(
            f"rabbit://guest:guest@127.0.0.1:{port}/", topic="t", host="h"
        )
        started = time.monotonic()
        for number in range(3):
            channel.publish(channels.INTROSPECTION_ENDED, {"node_uuid": f"n-{number}"})
        assert time.monotonic() - started < SOON
        channel.stop()


def _refusing_url() -> str:
    """A Redis URL on a port nothing listens on: every connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


def test_a_put_is_held_to_the_api_requests_time_a_workers_keeps_its_retries(caplog):
    """In an API request a put ends with the request's time limit (the API answers 503
    in time); a worker's put (no request) has every one of its attempts."""
    queue = WorkQueue(_refusing_url(), "test-budget", max_retries=4, retry_interval=0.4)
    request = Request(node_uuid=str(uuid.uuid4()), event="inspect")
    try:
        with deadlines.bound(0.2), pytest.raises(ServiceUnavailable):
            queue.put(request)
        in_request = [r for r in caplog.records if "attempt" in r.getMessage()]
        caplog.clear()
        with pytest.raises(ServiceUnavailable):
            queue.put(request)
        in_worker = [r for r in caplog.records if "attempt" in r.getMessage()]
    finally:
        queue.close()
    # Within the request's time: no second attempt (on a machine busy enough, the time
    # may even be over before the first attempt fails and logs).
    assert len(in_request) <= 1
    assert len(in_worker) == 3
