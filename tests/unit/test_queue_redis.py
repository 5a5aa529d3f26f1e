"""kombu's Redis transport as our work queue drives it, on fakeredis (no server): what
`inspector status` counts. The whole contract (tests/contract/test_work_queue.py) runs
on fakeredis too, as one of its transports.
"""

import uuid

import pytest

from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from tests.contract import test_work_queue as contract
from tests.fakes.redis_server import fake_redis


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
