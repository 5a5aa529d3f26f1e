"""The work queue contract, one suite run against every transport: memory, Redis (on its
server and on fakeredis, in the test process), RabbitMQ.

What the worker relies on: at-least-once delivery, delayed retries, dead letters,
prompt shutdown, one connection per thread, and two lanes (starts apart from the rest)
taken in turns, with one unsettled message per thread across both.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from inspector.broker.message import Envelope, Request
from inspector.broker.queue import START_EVENTS, Delivery, WorkQueue
from inspector.errors import ServiceUnavailable
from tests.conftest import delete_queues

#: Generous bound for "soon": slow CI machines, not a performance assertion.
SOON = 5.0
#: Requests queued on the other lane in the lane tests: behind them all, in one FIFO.
BATCH = 60
#: A request alone on its lane comes out among the first this many deliveries (RabbitMQ
#: takes turns at random: missing it has a chance of about 2 ** -(EARLY - 1)).
EARLY = BATCH // 3
#: The other lane's event: a start, and a request that moves an introspection under way.
OTHER_LANE = {"continue": "inspect", "inspect": "continue"}

MakeQueue = Callable[..., WorkQueue]


#: The transports shared by several processes: Redis on its server and on fakeredis
#: (which kombu in another process reaches over TCP too), RabbitMQ.
SERVERS = [
    pytest.param("redis", marks=pytest.mark.integration),
    pytest.param("fakeredis"),
    pytest.param("rabbitmq", marks=pytest.mark.integration),
]


@pytest.fixture(params=["memory", *SERVERS])
def queue_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=SERVERS)
def server_url(request: pytest.FixtureRequest) -> str:
    """The transports shared by several processes."""
    return request.getfixturevalue(f"{request.param}_url")


def _make_queues(url: str, queue_name: str) -> Iterator[MakeQueue]:
    created: list[WorkQueue] = []

    def make(name: str = queue_name, **kwargs: object) -> WorkQueue:
        kwargs.setdefault("max_retries", 3)
        kwargs.setdefault("retry_interval", 0.1)
        queue = WorkQueue(url, name, **kwargs)  # type: ignore[arg-type]
        created.append(queue)
        return queue

    yield make
    for queue in created:
        queue.close()
    # memory:// too: its queues live as long as the process.
    for name in {queue_name} | {queue.queue_name for queue in created}:
        delete_queues(url, name)


@pytest.fixture
def make_queue(queue_url: str, queue_name: str) -> Iterator[MakeQueue]:
    """Builds WorkQueues on the test's queue (or another name); closes and deletes them."""
    yield from _make_queues(queue_url, queue_name)


@pytest.fixture
def make_server_queue(server_url: str, queue_name: str) -> Iterator[MakeQueue]:
    yield from _make_queues(server_url, queue_name)


def get_within(queue: WorkQueue, seconds: float = SOON) -> Delivery:
    """The next delivery, polling until a deadline."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        delivery = queue.get(0.5)
        if delivery is not None:
            return delivery
    pytest.fail(f"nothing delivered within {seconds}s")


def drain(queue: WorkQueue) -> list[Request]:
    """Get and ack until the queue stays empty for a moment."""
    requests = []
    while (delivery := queue.get(0.5)) is not None:
        assert delivery.request is not None, delivery.error
        requests.append(delivery.request)
        delivery.ack()
    return requests


def test_round_trip(make_queue: MakeQueue) -> None:
    queue = make_queue()
    request = Request(node_uuid="node-1", event="inspect")
    queue.put(request)

    delivery = get_within(queue)
    assert delivery.request == request
    assert delivery.error is None
    delivery.ack()
    assert queue.get(0.3) is None
    assert queue.depth() == 0


def test_plain_puts_come_out_in_order(make_queue: MakeQueue) -> None:
    queue = make_queue()
    requests = [Request(node_uuid=f"node-{i}", event="inspect") for i in range(5)]
    for request in requests:
        queue.put(request)

    assert drain(queue) == requests


def test_get_on_empty_returns_none_after_about_the_timeout(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.depth()  # connect first: the bound below is about waiting, not connecting
    started = time.monotonic()
    assert queue.get(0.5) is None
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 0.5 + SOON


def test_depth_and_purge(make_queue: MakeQueue) -> None:
    queue = make_queue()
    for i in range(3):
        queue.put(Request(node_uuid=f"node-{i}", event="inspect"))

    assert queue.depth() == 3
    assert queue.purge() == 3
    assert queue.depth() == 0
    assert queue.get(0.3) is None


@pytest.mark.parametrize("event", OTHER_LANE)
def test_unacked_delivery_comes_back_when_its_consumer_closes(
    make_queue: MakeQueue, event: str
) -> None:
    first, second = make_queue(), make_queue()
    request = Request(node_uuid="node-1", event=event)
    first.put(request)
    assert get_within(first).request == request

    first.close()

    again = get_within(second)
    assert again.request == request
    again.ack()
    assert second.get(0.3) is None


def test_start_events_are_the_ones_that_open_an_introspection() -> None:
    assert START_EVENTS == {"inspect", "reapply", "enroll"}


def put_behind_a_batch(queue: WorkQueue, event: str) -> Request:
    """BATCH requests of the other lane, then one of `event`'s lane; returns that one."""
    for i in range(BATCH):
        queue.put(Request(node_uuid=f"node-{i}", event=OTHER_LANE[event]))
    request = Request(node_uuid="node-last", event=event)
    queue.put(request)
    return request


def deliveries_until(queue: WorkQueue, wanted: Request) -> tuple[int, Delivery]:
    """Acks what comes before `wanted`; how many that were, and `wanted`'s delivery."""
    before = 0
    while True:
        delivery = get_within(queue)
        assert delivery.request is not None
        if delivery.request.request_id == wanted.request_id:
            return before, delivery
        delivery.ack()
        before += 1


@pytest.mark.parametrize("event", OTHER_LANE)
def test_a_request_does_not_wait_behind_the_other_lane(make_queue: MakeQueue, event: str) -> None:
    queue = make_queue()
    request = put_behind_a_batch(queue, event)

    before, delivery = deliveries_until(queue, request)
    assert before < EARLY
    delivery.ack()
    assert len(drain(queue)) == BATCH - before


@pytest.mark.parametrize("event", OTHER_LANE)
def test_retry_keeps_the_lane(make_queue: MakeQueue, event: str) -> None:
    queue = make_queue()
    request = put_behind_a_batch(queue, event)
    before, delivery = deliveries_until(queue, request)
    delivery.retry(0)

    # On the other lane it would wait behind the BATCH - before - 1 still there.
    again, delivery = deliveries_until(queue, request)
    assert before + again < EARLY
    assert delivery.request is not None and delivery.request.attempt == 1
    delivery.ack()


def test_depth_and_purge_count_both_lanes(make_queue: MakeQueue) -> None:
    queue = make_queue()
    for i, event in enumerate(["inspect", "continue", "reapply", "finish", "continue"]):
        queue.put(Request(node_uuid=f"node-{i}", event=event))

    assert queue.depth() == 5
    assert queue.purge() == 5
    assert queue.depth() == 0
    assert queue.get(0.3) is None


def test_a_getter_without_starts_takes_only_the_main_lane(make_queue: MakeQueue) -> None:
    main_only, both = make_queue(), make_queue()
    for i, event in enumerate(["inspect", "continue", "reapply"]):
        main_only.put(Request(node_uuid=f"node-{i}", event=event))

    delivery = main_only.get(SOON, starts=False)
    assert delivery is not None and delivery.request.event == "continue"
    delivery.ack()
    assert main_only.get(0.5, starts=False) is None  # the starts wait for another getter
    assert main_only.depth() == 2
    assert sorted(r.event for r in drain(both)) == ["inspect", "reapply"]
    with pytest.raises(ValueError, match="consumes"):
        main_only.get(0.1)  # this thread's connection consumes the main lane for good


def test_one_unsettled_message_per_thread_across_lanes(make_queue: MakeQueue) -> None:
    holder, other = make_queue(), make_queue()
    requests = {Request(node_uuid=f"node-{i}", event=e) for i, e in enumerate([*OTHER_LANE] * 2)}
    for request in requests:
        holder.put(request)
    held = get_within(holder)
    # Holding it, the thread is given nothing more, from either lane...
    assert holder.get(0.3) is None

    # ...so that another worker gets every other message, while it still holds that one.
    got: list[Request] = []
    deadline = time.monotonic() + SOON
    while len(got) < len(requests) - 1 and time.monotonic() < deadline:
        if (delivery := other.get(0.3)) is not None:
            assert delivery.request is not None
            got.append(delivery.request)
            delivery.ack()
    assert held.request is not None
    assert set(got) == requests - {held.request}
    held.ack()
    assert other.get(0.3) is None


def test_unacked_delivery_comes_back_when_its_thread_ends(make_queue: MakeQueue) -> None:
    queue = make_queue()
    request = Request(node_uuid="node-1", event="inspect")
    queue.put(request)
    got: list[Delivery | None] = []
    thread = threading.Thread(target=lambda: got.append(queue.get(SOON)))
    thread.start()
    thread.join()
    assert got[0] is not None and got[0].request == request

    # Same WorkQueue, another thread: it closes the dead thread's connection.
    again = get_within(queue)
    assert again.request == request
    again.ack()


def test_retry_is_not_delivered_before_its_delay(make_queue: MakeQueue) -> None:
    queue = make_queue()
    request = Request(node_uuid="node-1", event="inspect")
    queue.put(request)
    delivery = get_within(queue)
    retried_at = time.time()
    delivery.retry(1.5)

    assert queue.get(0.3) is None
    again = get_within(queue)
    assert time.time() >= retried_at + 1.5
    assert again.request is not None
    assert again.request.request_id == request.request_id
    assert again.request.attempt == request.attempt + 1
    again.ack()
    assert queue.get(0.3) is None


def test_retry_does_not_block_the_caller(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.put(Request(node_uuid="node-1", event="inspect"))
    delivery = get_within(queue)
    started = time.monotonic()
    delivery.retry(60)
    assert time.monotonic() - started < SOON


def test_delayed_request_does_not_hold_back_due_ones(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.put(Request(node_uuid="node-1", event="inspect"))
    get_within(queue).retry(60)
    due = Request(node_uuid="node-2", event="inspect")
    queue.put(due)

    delivery = get_within(queue)
    assert delivery.request == due
    delivery.ack()
    assert queue.get(0.3) is None  # the delayed one is still not due


def test_envelope_written_by_hand_is_understood(make_queue: MakeQueue) -> None:
    queue = make_queue()
    request = Request(node_uuid="node-1", event="inspect")
    queue.put_raw(Envelope(request, not_before=time.time() - 1).to_json())

    delivery = get_within(queue)
    assert delivery.request == request
    delivery.ack()


MALFORMED = {
    "not JSON": "this is not json",
    "not an envelope": json.dumps(["a", "list"]),
    "bare request": Request(node_uuid="n", event="inspect").to_json(),
    "unknown schema version": json.dumps(
        {"request": {**Request(node_uuid="n", event="inspect").to_dict(), "schema": 99}}
    ),
    "missing field": json.dumps(
        {"request": {k: v for k, v in Request("n", "inspect").to_dict().items() if k != "event"}}
    ),
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_body_is_dead_lettered(
    make_queue: MakeQueue, queue_name: str, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    queue = make_queue()
    queue.put_raw(body)

    delivery = get_within(queue)
    assert delivery.request is None
    assert delivery.error
    assert delivery.body == body.encode()
    with caplog.at_level(logging.WARNING, logger="inspector.broker.queue"):
        delivery.dead_letter(f"malformed: {delivery.error}")

    assert queue.get(0.3) is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert delivery.error in warnings[0].getMessage()
    dead = get_within(make_queue(f"{queue_name}.dead"))
    record = json.loads(dead.body)
    assert record["body"] == body
    assert record["reason"] == f"malformed: {delivery.error}"
    assert record["queue"] == queue_name
    assert record["lane"] == queue_name
    dead.ack()


def test_dead_letter_of_a_request(make_queue: MakeQueue, queue_name: str) -> None:
    queue = make_queue()
    request = Request(node_uuid="node-1", event="inspect")
    queue.put(request)
    get_within(queue).dead_letter("no such node")

    dead = get_within(make_queue(f"{queue_name}.dead"))
    record = json.loads(dead.body)
    assert record["reason"] == "no such node"
    assert Envelope.from_json(record["body"]).request == request
    assert record["lane"] == f"{queue_name}.start"  # inspect starts an introspection
    dead.ack()


def test_get_returns_promptly_on_shutdown(make_queue: MakeQueue) -> None:
    shutdown = threading.Event()
    queue = make_queue(shutdown=shutdown)
    queue.depth()
    timer = threading.Timer(0.2, shutdown.set)
    timer.start()
    started = time.monotonic()
    try:
        assert queue.get(60) is None
    finally:
        timer.cancel()
    assert time.monotonic() - started < SOON
    # Once set, get() does not even wait for a message that is there.
    queue.put(Request(node_uuid="node-1", event="inspect"))
    assert queue.get(60) is None


def test_shutdown_interrupts_the_wait_for_a_delayed_request(make_queue: MakeQueue) -> None:
    shutdown = threading.Event()
    queue = make_queue(shutdown=shutdown)
    queue.put(Request(node_uuid="node-1", event="inspect"))
    get_within(queue).retry(60)
    timer = threading.Timer(0.3, shutdown.set)
    timer.start()
    started = time.monotonic()
    try:
        assert queue.get(30) is None
    finally:
        timer.cancel()
    assert time.monotonic() - started < SOON


def test_concurrent_getters_each_get_distinct_messages(make_queue: MakeQueue) -> None:
    queue = make_queue()
    requests = {Request(node_uuid=f"node-{i}", event="inspect") for i in range(40)}
    for request in requests:
        queue.put(request)
    received: list[tuple[str, Request]] = []
    lock = threading.Lock()

    def consume() -> None:
        deadline = time.monotonic() + 4 * SOON
        while time.monotonic() < deadline:
            with lock:
                if len(received) >= len(requests):
                    return
            delivery = queue.get(0.3)
            if delivery is None:
                continue
            assert delivery.request is not None
            with lock:
                received.append((threading.current_thread().name, delivery.request))
            delivery.ack()

    threads = [threading.Thread(target=consume, name=f"getter-{i}") for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    got = [request for _, request in received]
    assert len(got) == len(requests)
    assert set(got) == requests
    assert queue.get(0.3) is None


def test_concurrent_puts_are_all_received_once(make_queue: MakeQueue) -> None:
    queue = make_queue()
    requests = [Request(node_uuid=f"node-{i}", event="inspect") for i in range(40)]

    def put(chunk: list[Request]) -> None:
        for request in chunk:
            queue.put(request)

    threads = [threading.Thread(target=put, args=(requests[i::4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    got = drain(queue)
    assert sorted(got, key=lambda r: r.node_uuid) == sorted(requests, key=lambda r: r.node_uuid)


def test_settling_twice_or_from_another_thread_is_refused(make_queue: MakeQueue) -> None:
    queue = make_queue()
    queue.put(Request(node_uuid="node-1", event="inspect"))
    delivery = get_within(queue)
    errors: list[BaseException] = []

    def ack() -> None:
        try:
            delivery.ack()
        except RuntimeError as error:
            errors.append(error)

    thread = threading.Thread(target=ack)
    thread.start()
    thread.join()
    assert len(errors) == 1

    delivery.ack()
    with pytest.raises(RuntimeError):
        delivery.ack()


def test_is_single_process(queue_url: str, make_queue: MakeQueue) -> None:
    assert make_queue().is_single_process == queue_url.startswith("memory")


CONSUMER = """
import sys
from inspector.broker.queue import WorkQueue
queue = WorkQueue(sys.argv[1], sys.argv[2], visibility_timeout=float(sys.argv[3]))
delivery = queue.get(30)
print(delivery.request.request_id if delivery else "none", flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.parametrize("event", OTHER_LANE)
def test_delivery_of_a_killed_consumer_comes_back(
    server_url: str, queue_name: str, make_server_queue: MakeQueue, event: str
) -> None:
    visibility_timeout = 2.0
    queue = make_server_queue(visibility_timeout=visibility_timeout)
    request = Request(node_uuid="node-1", event=event)
    queue.put(request)
    consumer = subprocess.Popen(
        [sys.executable, "-c", CONSUMER, server_url, queue_name, str(visibility_timeout)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert consumer.stdout is not None
        assert consumer.stdout.readline().strip() == request.request_id
    finally:
        os.kill(consumer.pid, signal.SIGKILL)
        consumer.wait()
        assert consumer.stdin is not None and consumer.stdout is not None
        consumer.stdin.close()
        consumer.stdout.close()
    killed_at = time.monotonic()

    again = get_within(queue, visibility_timeout + 3 * SOON)
    assert again.request == request
    assert again.redelivered
    if server_url.startswith("redis"):
        # Redis has no connection-bound acks: it waits for the visibility timeout.
        assert time.monotonic() - killed_at >= visibility_timeout * 0.5
    again.ack()


@pytest.mark.parametrize(
    "url", ["redis://:secret@127.0.0.1:1/0", "amqp://user:secret@127.0.0.1:1//"]
)
def test_unreachable_service_raises_service_unavailable(url: str) -> None:
    queue = WorkQueue(url, "nowhere", max_retries=2, retry_interval=0.05)
    try:
        with pytest.raises(ServiceUnavailable) as raised:
            queue.put(Request(node_uuid="node-1", event="inspect"))
        with pytest.raises(ServiceUnavailable):
            queue.get(0.1)
    finally:
        queue.close()
    assert "secret" not in str(raised.value)
    assert "127.0.0.1:1" in str(raised.value)
    assert raised.value.retryable


def test_shutdown_stops_connection_retries() -> None:
    shutdown = threading.Event()
    queue = WorkQueue(
        "redis://127.0.0.1:1/0", "nowhere", max_retries=1000, retry_interval=30, shutdown=shutdown
    )
    timer = threading.Timer(0.2, shutdown.set)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(ServiceUnavailable):
            queue.put(Request(node_uuid="node-1", event="inspect"))
        assert queue.get(1) is None
    finally:
        timer.cancel()
        queue.close()
    assert time.monotonic() - started < SOON
