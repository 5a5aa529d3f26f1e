"""The introspection history's contract on every database (SQLite, PostgreSQL, MariaDB):
an ended introspection is kept with the data it stored (not an earlier one's), once per
start; listed newest first by marker; pruned to the newest N per node (never the newest);
finished ones only are drift bases; the drift notification lands in the outbox."""

from datetime import datetime, timedelta

import pytest

from inspector import errors
from inspector.store import Store, schema
from inspector.store.outbox import DRIFT
from tests import seed

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
OTHER = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"
T0 = datetime(2026, 1, 2, 3, 4, 5, 678901)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(database_url, clock):
    schema.upgrade(database_url)
    db = Store.from_url(database_url, clock=clock, notify=True)
    yield db
    db.close()


def introspect(store: Store, clock: Clock, node: str, serial: str, *, fail: bool = False):
    """One introspection of `node` from start to its end, its data stored on the way."""
    clock.now += timedelta(minutes=1)
    started = clock.now
    try:
        store.get_node(node)
    except errors.NotFound:
        seed.node(store, node, "starting", started_at=started)
    else:
        seed.move(store, node, "starting", started_at=started, finished_at=None, error=None)
    clock.now += timedelta(seconds=1)
    if not fail:
        store.store_data(node, {"inventory": {"serial": serial}}, processed=False)
        store.store_data(node, {"inventory": {"serial": serial}, "p": 1}, processed=True)
        ended = seed.move(store, node, "finished", finished_at=clock.now)
    else:
        ended = seed.move(store, node, "error", finished_at=clock.now, error="boom")
    assert store.keep_introspection(ended)
    return ended


def test_an_ended_introspection_is_kept_with_its_own_data_once(store, clock):
    introspect(store, clock, NODE, "A")
    failed = introspect(store, clock, NODE, "B", fail=True)
    store.keep_introspection(failed)  # a redelivered end replaces, never adds
    entries = store.history_page(NODE, limit=10)
    assert [(e.state, e.error) for e in entries] == [("error", "boom"), ("finished", None)]
    assert entries[0].started_at == failed.started_at
    # The failed one stored nothing: the data of the one before is not copied into it.
    assert store.history_data(NODE, entries[0].id)[1] == {"raw": None, "processed": None}
    first = store.history_data(NODE, entries[1].id)[1]
    assert first["raw"] == {"inventory": {"serial": "A"}}
    assert first["processed"]["p"] == 1


def test_history_pages_newest_first_by_marker(store, clock):
    for serial in "ABC":
        introspect(store, clock, NODE, serial)
    introspect(store, clock, OTHER, "X")
    ids = [e.id for e in store.history_page(NODE, limit=10)]
    assert ids == sorted(ids, reverse=True) and len(ids) == 3
    assert [e.id for e in store.history_page(NODE, limit=2)] == ids[:2]
    assert [e.id for e in store.history_page(NODE, limit=2, marker=ids[1])] == ids[2:]
    with pytest.raises(errors.BadRequest):
        store.history_page(NODE, limit=2, marker=store.history_page(OTHER, limit=1)[0].id)
    assert store.history_data(OTHER, ids[0]) is None


def test_drift_bases_are_finished_introspections_before_this_one(store, clock):
    first = introspect(store, clock, NODE, "A")
    introspect(store, clock, NODE, "B", fail=True)
    bases = store.finished_introspections(NODE, before=clock.now + timedelta(hours=1))
    assert [b.started_at for b in bases] == [first.started_at]
    assert store.finished_introspections(NODE, before=first.started_at) == []


def test_pruning_keeps_the_newest_per_node(store, clock):
    for serial in "ABC":
        introspect(store, clock, NODE, serial)
    introspect(store, clock, OTHER, "X")
    newest = store.history_page(NODE, limit=2)
    assert store.prune_history(2) == 1
    assert store.history_page(NODE, limit=10) == newest
    assert store.prune_history(0) == 1  # at least the newest stays, whatever asked
    assert store.history_page(NODE, limit=10) == newest[:1]
    assert len(store.history_page(OTHER, limit=10)) == 1
    assert store.forget_history(NODE) == 1
    assert not store.has_history(NODE) and store.has_history(OTHER)


def test_the_drift_notification_goes_into_the_outbox(store, clock):
    node = introspect(store, clock, NODE, "A")
    drift = {"base": 1, "changes": [{"path": "system.serial"}], "summary": {"system": 1}}
    store.notify_drift(node.uuid, node.started_at, drift)
    (note,) = [n for n in store.due_notifications() if n.event_type == DRIFT]
    assert note.node_uuid == NODE
    assert note.payload["summary"] == {"system": 1} and note.payload["base"] == 1
