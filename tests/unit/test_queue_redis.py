"""kombu's Redis transport as our work queue drives it, on fakeredis (no server): the
contract suite's checks (put, get, ack, retry with its delay, dead letters, the two
lanes, redelivery of an unacked message, after the visibility timeout when its
consumer was killed). The real Redis runs the whole contract in
tests/contract/test_work_queue.py; the long ones (a batch behind another lane, 40
concurrent puts) only there, since they try the queue's logic more than the transport.
"""

import uuid

import pytest

from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from tests.contract import test_work_queue as contract
from tests.fakes.redis_server import fake_redis


def named(check) -> str:
    return check.__name__.removeprefix("test_")


@pytest.fixture(scope="module")
def url():
    with fake_redis() as served:
        yield served


@pytest.fixture
def queue_name() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_queue(url, queue_name):
    yield from contract._make_queues(url, queue_name)


@pytest.mark.parametrize(
    "check",
    [
        contract.test_round_trip,
        contract.test_plain_puts_come_out_in_order,
        contract.test_get_on_empty_returns_none_after_about_the_timeout,
        contract.test_depth_and_purge,
        contract.test_depth_and_purge_count_both_lanes,
        contract.test_a_getter_without_starts_takes_only_the_main_lane,
        contract.test_one_unsettled_message_per_thread_across_lanes,
        contract.test_unacked_delivery_comes_back_when_its_thread_ends,
        contract.test_retry_is_not_delivered_before_its_delay,
        contract.test_retry_does_not_block_the_caller,
        contract.test_delayed_request_does_not_hold_back_due_ones,
        contract.test_envelope_written_by_hand_is_understood,
        contract.test_get_returns_promptly_on_shutdown,
        contract.test_shutdown_interrupts_the_wait_for_a_delayed_request,
        contract.test_concurrent_getters_each_get_distinct_messages,
        contract.test_settling_twice_or_from_another_thread_is_refused,
    ],
    ids=named,
)
def test_work_queue(make_queue, check):
    check(make_queue)


@pytest.mark.parametrize("event", contract.OTHER_LANE)
@pytest.mark.parametrize(
    "check",
    [
        contract.test_unacked_delivery_comes_back_when_its_consumer_closes,
        contract.test_retry_keeps_the_lane,
    ],
    ids=named,
)
def test_each_lane(make_queue, check, event):
    check(make_queue, event)


def test_malformed_body_is_dead_lettered(make_queue, queue_name, caplog):
    body = contract.MALFORMED["not JSON"]
    contract.test_malformed_body_is_dead_lettered(make_queue, queue_name, body, caplog)


def test_dead_letter_of_a_request(make_queue, queue_name):
    contract.test_dead_letter_of_a_request(make_queue, queue_name)


def test_is_not_single_process(url, make_queue):
    contract.test_is_single_process(url, make_queue)


def test_delivery_of_a_killed_consumer_comes_back(url, queue_name, make_queue):
    """The consumer is another process: kombu reaches the fake server over TCP too."""
    contract.test_delivery_of_a_killed_consumer_comes_back(url, queue_name, make_queue, "inspect")


def test_in_flight_counts_what_was_delivered_and_not_acknowledged(make_queue):
    """A worker's unacknowledged request (its worker may be dead: it comes back only after
    the visibility timeout) is not waiting any more, nor gone: in flight."""
    for i in range(3):
        make_queue().put(Request(node_uuid=f"node-{i}", event="inspect"))
    delivery = contract.get_within(make_queue())
    status = make_queue()  # another process's view: `inspector status`
    assert (status.depth(), status.in_flight()) == (2, 1)
    delivery.ack()
    assert (status.depth(), status.in_flight()) == (2, 0)


def test_in_flight_is_not_known_elsewhere():
    queue = WorkQueue("memory://", f"test-{uuid.uuid4().hex[:12]}")
    try:
        assert queue.in_flight() is None
    finally:
        queue.close()
