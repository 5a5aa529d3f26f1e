"""Transition requests as they travel on the work queue: a versioned JSON schema.

A request names a node, an event and a unique id; never a payload (the worker reads the
node's data from the database). It carries the global request id of the API request
that made it (its follow-ups too), which the worker's log lines and Ironic calls show.
Anything that does not parse is MalformedRequest.
"""

import dataclasses
import json
import math
import time
import uuid
from typing import Any

from inspector.errors import InspectorError

#: Version of the JSON layout below; a consumer refuses versions it does not know.
SCHEMA_VERSION = 1

#: Event name of a node removal request (not a state machine event).
DELETE = "delete"
#: Event name of an expiry request: remove the node's records if its introspection is
#: still the one that ended before the request was made (not a state machine event).
EXPIRE = "expire"

#: A field's type: a class, or classes, for isinstance.
_Kind = type | tuple[type, ...]

_FIELDS: dict[str, _Kind] = {
    "schema": int,
    "request_id": str,
    "node_uuid": str,
    "event": str,
    "enqueued_at": (int, float),
    "attempt": int,
}
#: Fields added to schema 1 since: a message from an older producer lacks them.
_OPTIONAL_FIELDS: dict[str, _Kind] = {
    "global_request_id": (str, type(None)),
}
#: Fields schema 1 had that nothing reads any more: still written (as null), since
#: workers of earlier releases require them (docs/upgrade.md), and still checked when
#: present; a later release may stop writing them.
_RETIRED_FIELDS: dict[str, _Kind] = {
    "payload_ref": (str, type(None)),
}


class MalformedRequest(InspectorError):
    """A message that is not a request we understand: dead-lettered, never retried."""

    http_status = 400


@dataclasses.dataclass(frozen=True)
class Request:
    node_uuid: str
    event: str
    request_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    enqueued_at: float = dataclasses.field(default_factory=time.time)
    attempt: int = 0
    #: The API request's global request id (req-<uuid>), passed on to Ironic and shown
    #: in the worker's log lines; None for a request no API request made (or an old one).
    global_request_id: str | None = None

    def retry(self, *, enqueued_at: float | None = None) -> "Request":
        """The same request, one attempt later (same id: it is still the same request);
        with `enqueued_at`, renewed: as if enqueued then (for a wait on others it must
        not be charged for)."""
        renewed = self.enqueued_at if enqueued_at is None else enqueued_at
        return dataclasses.replace(self, attempt=self.attempt + 1, enqueued_at=renewed)

    def follow_up(self, event: str, request_id: str | None = None) -> "Request":
        """A new request for the same node, e.g. the automatic `wait` after `inspect`.

        Its id derives from this one, so a redelivered request enqueues the same
        follow-up id again and the duplicate is recognised downstream.
        """
        return Request(
            node_uuid=self.node_uuid,
            event=event,
            request_id=request_id or f"{self.request_id[:40]}.{event}",
            global_request_id=self.global_request_id,
        )

    def to_dict(self) -> dict[str, Any]:
        body = dataclasses.asdict(self)
        body["schema"] = SCHEMA_VERSION
        body.update(dict.fromkeys(_RETIRED_FIELDS))
        return body

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Request":
        return cls.from_dict(_load_json(text))

    @classmethod
    def from_dict(cls, body: Any) -> "Request":
        if not isinstance(body, dict):
            raise MalformedRequest("not a JSON object")
        if body.get("schema") != SCHEMA_VERSION:
            raise MalformedRequest(f"unknown schema version {body.get('schema')!r}")
        for name, kind in _FIELDS.items():
            if name not in body:
                raise MalformedRequest(f"missing field {name}")
            if not isinstance(body[name], kind) or isinstance(body[name], bool):
                raise MalformedRequest(f"field {name} has the wrong type")
        for name, kind in (_OPTIONAL_FIELDS | _RETIRED_FIELDS).items():
            if not isinstance(body.get(name), kind):
                raise MalformedRequest(f"field {name} has the wrong type")
        if not body["node_uuid"] or not body["event"] or not body["request_id"]:
            raise MalformedRequest("empty node_uuid, event or request_id")
        fields: dict[str, Any] = {k: body[k] for k in _FIELDS if k != "schema"}
        optional: dict[str, Any] = {k: body.get(k) for k in _OPTIONAL_FIELDS}
        return cls(**fields, **optional)


@dataclasses.dataclass(frozen=True)
class Envelope:
    """What a queue message carries: a request and the earliest time to handle it.

    The envelope is the queue's business, not the request's: `not_before` (seconds
    since the epoch) delays a retried request without a broker feature for delays.
    """

    request: Request
    not_before: float | None = None

    def to_json(self) -> str:
        body = {"request": self.request.to_dict(), "not_before": self.not_before}
        return json.dumps(body, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Envelope":
        body = _load_json(text)
        if not isinstance(body, dict) or "request" not in body:
            raise MalformedRequest("not a queue envelope (no request)")
        not_before = body.get("not_before")
        if not_before is not None and (
            not isinstance(not_before, int | float)
            or isinstance(not_before, bool)
            or not math.isfinite(not_before)
        ):
            # NaN would never be due: the message would circulate forever.
            raise MalformedRequest("field not_before is not a finite number")
        return cls(request=Request.from_dict(body["request"]), not_before=not_before)

    def is_due(self, now: float) -> bool:
        return self.not_before is None or self.not_before <= now


def _load_json(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise MalformedRequest(f"not JSON: {exc}") from exc
