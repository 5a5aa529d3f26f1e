"""Ironic calls made for an API request fit in its time limit: no retry whose wait would
end after it, and an attempt waits for Ironic at most what is left."""

import time

import pytest

from inspector import deadlines
from inspector.errors import ServiceUnavailable
from inspector.ironic.connection import connect
from inspector.ironic.failures import Unreachable
from tests.fakes.clock import Clock
from tests.unit.test_ironic import (
    NODE,
    RecordingEvent,
    a_node,
    client,
    ironic_error,
)
from tests.unit.test_ironic_connection import server, standalone  # noqa: F401 - fixtures


@pytest.fixture
def conf(conf):
    conf.set_override("max_retries", 3, group="ironic")
    conf.set_override("retry_interval", 2.5, group="ironic")
    return conf


def test_no_retry_waits_past_the_requests_deadline(conf):
    clock, shutdown = Clock(1000.0), RecordingEvent()
    busy = ironic_error(503, "No free conductor workers")
    ironic = client(conf, shutdown, busy, busy, a_node())
    waits = shutdown.wait

    def wait(timeout=None):
        clock.now += timeout  # the retry's wait takes its time
        return waits(timeout)

    shutdown.wait = wait
    with deadlines.bound(4.0, clock):
        clock.now += 1.0  # 3 s left: one wait of 2.5 s fits, not a second
        with pytest.raises(ServiceUnavailable, match="time limit") as caught:
            ironic.get_node(NODE)
    assert caught.value.service == "Ironic"
    assert shutdown.waits == [2.5]
    assert ironic.calls == 2


def test_outside_a_request_the_retry_policy_alone_applies(conf):
    shutdown = RecordingEvent()
    busy = ironic_error(503, "No free conductor workers")
    assert client(conf, shutdown, busy, busy, a_node()).get_node(NODE).uuid == NODE
    assert shutdown.waits == [2.5, 2.5]


def test_a_hung_ironic_is_given_up_when_the_request_runs_out_of_time(standalone, server):  # noqa: F811
    standalone.set_override("timeout", 30, group="ironic")
    connection = connect(standalone)
    connection.send("GET", f"/nodes/{NODE}")  # the endpoint is known
    server.hold.clear()  # the next request is answered only once the test is over
    started = time.monotonic()
    with deadlines.bound(0.3), pytest.raises(Unreachable, match=r"timed out after 0\.3 s"):
        connection.send("GET", f"/nodes/{NODE}")
    assert time.monotonic() - started < 10  # not [ironic] timeout's 30 s


def test_no_call_starts_once_the_request_ran_out_of_time(standalone, server):  # noqa: F811
    connection = connect(standalone)
    clock = Clock(1000.0)
    with deadlines.bound(1.0, clock):
        clock.now += 1.0
        with pytest.raises(ServiceUnavailable, match="Ironic unavailable"):
            connection.send("GET", f"/nodes/{NODE}")
    assert server.seen == []
