"""Steps the API tests share (a helper, not a test): start or abort an introspection
through a Flask test client, move a node on as its worker would, and the queue the
in-process API enqueues to."""

import uuid

from inspector.store import Change, NodeRecord, Store

#: The API version header of the requests below (ironic-inspector's newest, 1.18).
V = {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}


def _headers(request_id: str | None) -> dict[str, str]:
    return {**V, **({"X-Request-ID": request_id} if request_id else {})}


def start(client, ident: str, request_id: str | None = None, **kwargs):
    """POST /v1/introspection/<ident>, with an X-Request-ID when given."""
    return client.post(f"/v1/introspection/{ident}", headers=_headers(request_id), **kwargs)


def abort(client, ident: str, request_id: str | None = None):
    """POST /v1/introspection/<ident>/abort, with an X-Request-ID when given."""
    return client.post(f"/v1/introspection/{ident}/abort", headers=_headers(request_id))


def move(store: Store, node_uuid: str, event: str, target: str, **fields: object) -> NodeRecord:
    """The node moved from its state to `target` by `event`, as its worker would have
    moved it (a request recorded `done`, under a new id); `fields` go into the Change."""
    current = store.get_node(node_uuid)
    fields.setdefault("request_id", uuid.uuid4().hex)
    fields.setdefault("status", "done")
    change = Change(
        node_uuid=node_uuid,
        expected_version=current.version,
        event=event,
        source=current.state,
        target=target,
        **fields,
    )
    return store.apply(change, current)


class RecordingQueue:
    """The API's view of the work queue: put() only, every request kept."""

    def __init__(self) -> None:
        self.requests = []

    def put(self, request) -> None:
        self.requests.append(request)

    def events(self) -> list[tuple[str, str]]:
        return [(r.node_uuid, r.event) for r in self.requests]
