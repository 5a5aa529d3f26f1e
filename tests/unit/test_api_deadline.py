"""A request's time limit ([api] request_timeout) and the 503 of a backend out of reach:
Retry-After, the API's error format, and ramdisk data never stored once the request's
time is up."""

import pytest

from inspector import deadlines
from inspector.api import app as app_factory
from inspector.api import deadline as deadline_module
from inspector.api import errors as api_errors
from inspector.errors import ServiceUnavailable
from tests.fakes.clock import Clock
from tests.unit.test_api_continue import IPA, macs, waiting_node


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock(1000.0)
    monkeypatch.setattr(deadline_module.Bounded, "clock", staticmethod(clock))
    return clock


def test_a_backend_out_of_reach_is_a_503_with_retry_after(client, ironic, store, queue):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA)})

    def unreachable(request):
        raise ServiceUnavailable("The work queue is unavailable", service="queue")

    queue.put = unreachable
    answer = client.post("/v1/continue", json=IPA)
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == str(api_errors.SERVICE_RETRY_AFTER)
    assert answer.json == {"error": {"message": "The work queue is unavailable"}}
    assert store.get_node(node.uuid).state == "waiting"


def test_other_errors_ask_for_no_retry(client):
    answer = client.get("/v1/introspection/c2a5a28b-7d59-4c2e-9d1d-2a1d1a8a1e7f")
    assert answer.status_code == 404
    assert "Retry-After" not in answer.headers


def test_every_request_runs_under_the_configured_time_limit(conf, store, queue, ironic, clock):
    conf.set_override("request_timeout", 6.5, group="api")
    client = app_factory.create_app(conf, store=store, queue=queue, ironic=ironic).test_client()
    seen = []
    read = store.list_nodes

    def recording(*args, **kwargs):
        seen.append(deadlines.remaining())
        return read(*args, **kwargs)

    store.list_nodes = recording
    assert client.get("/v1/introspection").status_code == 200
    assert seen == [6.5]
    assert deadlines.remaining() is None  # nothing left bound after the request


def test_ramdisk_data_is_not_stored_once_the_request_ran_out_of_time(
    client, ironic, store, queue, clock
):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA)})
    lookup = store.lookup_nodes

    def slow_lookup(wanted):
        found = lookup(wanted)
        clock.now += 4.0  # the lookup took the request's whole time
        return found

    store.lookup_nodes = slow_lookup
    answer = client.post("/v1/continue", json=IPA)
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == str(api_errors.SERVICE_RETRY_AFTER)
    assert "time limit" in answer.json["error"]["message"]
    assert store.get_data(node.uuid, processed=False) is None
    assert [r.event for r in queue.requests] == ["inspect"]  # no `continue` for a worker


def test_no_continue_is_enqueued_once_the_request_ran_out_of_time(
    client, ironic, store, queue, clock
):
    node = waiting_node(client, ironic, store, {"mac": macs(IPA)})
    write = store.store_data

    def slow_write(*args, **kwargs):
        write(*args, **kwargs)
        clock.now += 4.0  # the data was written as the time ran out

    store.store_data = slow_write
    answer = client.post("/v1/continue", json=IPA)
    assert answer.status_code == 503
    assert "Retry-After" in answer.headers
    # The data stays unprocessed: no worker is asked; the ramdisk's retry writes it again.
    assert [r.event for r in queue.requests] == ["inspect"]
    assert store.get_node(node.uuid).state == "waiting"
