"""Requests and their queue envelope: round trips, and every way a body can be malformed."""

import json
import math

import pytest

from inspector.broker.message import SCHEMA_VERSION, Envelope, MalformedRequest, Request

GLOBAL_ID = "req-6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11"


def _request() -> Request:
    return Request(
        node_uuid="node-1",
        event="inspect",
        request_id="req-1",
        enqueued_at=1700000000.5,
        attempt=2,
        global_request_id=GLOBAL_ID,
    )


def test_request_round_trip() -> None:
    request = _request()
    assert Request.from_json(request.to_json()) == request
    assert Request.from_json(request.to_json().encode()) == request


def test_request_json_carries_the_schema_version() -> None:
    assert json.loads(_request().to_json())["schema"] == SCHEMA_VERSION


def test_request_defaults_round_trip() -> None:
    request = Request(node_uuid="node-1", event="inspect")
    again = Request.from_json(request.to_json())
    assert again == request
    assert again.attempt == 0


def test_the_retired_payload_ref_is_written_as_null_and_read_either_way() -> None:
    # Workers of earlier releases require the key (docs/upgrade.md); nothing reads it.
    body = _request().to_dict()
    assert body["payload_ref"] is None
    assert Request.from_dict(body) == _request()
    assert Request.from_dict(_with("payload_ref", "raw:node-1")) == _request()
    assert Request.from_dict(_without("payload_ref")) == _request()


def test_from_dict_leaves_its_argument_alone() -> None:
    body = _request().to_dict()
    copy = dict(body)
    Request.from_dict(body)
    assert body == copy


def test_retry_keeps_the_id_and_counts_the_attempt() -> None:
    request = _request()
    again = request.retry()
    assert again.request_id == request.request_id
    assert again.attempt == request.attempt + 1
    assert again.enqueued_at == request.enqueued_at


def test_follow_up_id_derives_from_the_request() -> None:
    request = _request()
    follow_up = request.follow_up("wait")
    assert follow_up.request_id == request.follow_up("wait").request_id
    assert follow_up.request_id != request.request_id
    assert (follow_up.node_uuid, follow_up.event) == (request.node_uuid, "wait")


def test_the_global_request_id_travels_with_the_request_and_its_follow_ups() -> None:
    request = _request()
    assert json.loads(request.to_json())["global_request_id"] == GLOBAL_ID
    assert request.retry().global_request_id == GLOBAL_ID
    assert request.follow_up("wait").global_request_id == GLOBAL_ID
    assert Request(node_uuid="n", event="inspect").global_request_id is None


def test_a_message_from_before_the_global_request_id_still_loads() -> None:
    # What an older API or worker enqueued (a rolling upgrade): no global_request_id.
    old = _without("global_request_id")
    request = Request.from_json(json.dumps(old))
    assert request.global_request_id is None
    assert request.request_id == "req-1" and request.attempt == 2
    assert Request.from_json(request.to_json()) == request


def _without(name: str) -> dict:
    body = _request().to_dict()
    del body[name]
    return body


def _with(name: str, value: object) -> dict:
    return {**_request().to_dict(), name: value}


MALFORMED_REQUESTS = {
    "not JSON": "{not json",
    "not UTF-8": b"\xff\xfe",
    "empty": "",
    "a list": json.dumps([1, 2]),
    "a string": json.dumps("inspect"),
    "no schema": json.dumps(_without("schema")),
    "unknown schema": json.dumps(_with("schema", SCHEMA_VERSION + 1)),
    "schema as a string": json.dumps(_with("schema", str(SCHEMA_VERSION))),
    **{
        f"missing {name}": json.dumps(_without(name))
        for name in _request().to_dict()
        # optional: older messages lack global_request_id, later ones payload_ref
        if name not in ("global_request_id", "payload_ref")
    },
    "node_uuid not a string": json.dumps(_with("node_uuid", 1)),
    "event null": json.dumps(_with("event", None)),
    "request_id a number": json.dumps(_with("request_id", 7)),
    "payload_ref a number": json.dumps(_with("payload_ref", 7)),
    "enqueued_at a string": json.dumps(_with("enqueued_at", "now")),
    "enqueued_at a boolean": json.dumps(_with("enqueued_at", True)),
    "attempt a float": json.dumps(_with("attempt", 1.5)),
    "attempt a boolean": json.dumps(_with("attempt", False)),
    "global_request_id a number": json.dumps(_with("global_request_id", 7)),
    "global_request_id a list": json.dumps(_with("global_request_id", [GLOBAL_ID])),
    "empty node_uuid": json.dumps(_with("node_uuid", "")),
    "empty event": json.dumps(_with("event", "")),
    "empty request_id": json.dumps(_with("request_id", "")),
}


@pytest.mark.parametrize("text", MALFORMED_REQUESTS.values(), ids=MALFORMED_REQUESTS.keys())
def test_malformed_request(text: str | bytes) -> None:
    with pytest.raises(MalformedRequest) as raised:
        Request.from_json(text)
    assert raised.value.message
    assert raised.value.http_status == 400
    assert not raised.value.retryable


def test_malformed_request_says_which_field() -> None:
    with pytest.raises(MalformedRequest, match="missing field node_uuid"):
        Request.from_json(json.dumps(_without("node_uuid")))
    with pytest.raises(MalformedRequest, match="unknown schema version 99"):
        Request.from_json(json.dumps(_with("schema", 99)))


@pytest.mark.parametrize("not_before", [None, 1700000100.25, 1700000100])
def test_envelope_round_trip(not_before: float | None) -> None:
    envelope = Envelope(_request(), not_before=not_before)
    assert Envelope.from_json(envelope.to_json()) == envelope
    assert Envelope.from_json(envelope.to_json().encode()) == envelope


def test_envelope_without_not_before_field() -> None:
    body = json.dumps({"request": _request().to_dict()})
    assert Envelope.from_json(body) == Envelope(_request())


def test_envelope_is_due() -> None:
    assert Envelope(_request()).is_due(0)
    assert Envelope(_request(), not_before=100).is_due(100)
    assert Envelope(_request(), not_before=100).is_due(101)
    assert not Envelope(_request(), not_before=100).is_due(99.5)


MALFORMED_ENVELOPES = {
    "not JSON": "]",
    "not UTF-8": b"\xc3\x28",
    "a list": json.dumps([_request().to_dict()]),
    "a bare request": _request().to_json(),
    "request null": json.dumps({"request": None}),
    "request malformed": json.dumps({"request": _without("event")}),
    "request of an unknown schema": json.dumps({"request": _with("schema", 99)}),
    "not_before a string": json.dumps({"request": _request().to_dict(), "not_before": "soon"}),
    "not_before a boolean": json.dumps({"request": _request().to_dict(), "not_before": True}),
    "not_before NaN": json.dumps({"request": _request().to_dict(), "not_before": math.nan}),
    "not_before infinite": json.dumps({"request": _request().to_dict(), "not_before": math.inf}),
}


@pytest.mark.parametrize("text", MALFORMED_ENVELOPES.values(), ids=MALFORMED_ENVELOPES.keys())
def test_malformed_envelope(text: str | bytes) -> None:
    with pytest.raises(MalformedRequest) as raised:
        Envelope.from_json(text)
    assert raised.value.message
