"""The drift between two introspections of a node's history, as the API and the
`inspector drift` command answer it: which two (by default the last two finished), then
`drift.compare` of their raw data. Reads the store; writes nothing."""

from typing import Any

from inspector.errors import BadRequest, NotFound
from inspector.processing import drift
from inspector.store.introspections import EntryRecord
from inspector.store.worker_store import HistoryReads


def _found(store: HistoryReads, node_uuid: str, ident: int) -> tuple[EntryRecord, dict[str, Any]]:

    found = store.history_data(node_uuid, ident)
    if found is None:
        raise NotFound(f"Introspection {ident} of node {node_uuid} not found")
    return found


def between(
    store: HistoryReads, node_uuid: str, old: int | None, new: int | None
) -> dict[str, Any]:
    """{"from", "to", "changes", "summary"}: `new` defaults to the newest finished
    introspection, `old` to the finished one before `new` (None, with no changes, when
    there is none). NotFound for an id the node's history lacks; BadRequest when `old`
    started after `new`."""
    if new is None:
        latest = store.finished_introspections(node_uuid)
        new = latest[0].id if latest else None
    target = None if new is None else _found(store, node_uuid, new)
    if old is None and target is not None:
        before = store.finished_introspections(node_uuid, before=target[0].started_at)
        old = before[0].id if before else None
    base = None if old is None else _found(store, node_uuid, old)
    if base is None or target is None:
        return document(old, new, [])
    if base[0].started_at > target[0].started_at:
        raise BadRequest(
            f"Introspection {old} (from) is newer than introspection {new} (to) of node {node_uuid}"
        )
    for ident, (_entry, data) in ((old, base), (new, target)):
        if data["raw"] is None:  # it failed before the ramdisk sent anything
            raise NotFound(f"Introspection {ident} of node {node_uuid} kept no data to compare")
    return document(old, new, drift.compare(base[1]["raw"], target[1]["raw"]))


def document(old: int | None, new: int | None, changes: list[dict]) -> dict[str, Any]:
    return {"from": old, "to": new, "changes": changes, "summary": drift.summary(changes)}
