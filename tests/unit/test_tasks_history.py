"""The worker's part of the history: an ended introspection kept by its end task, the
drift of the next one in its processed data, notified once and counted (fake Ironic,
SQLite store)."""

import datetime

import pytest

from inspector.broker.message import Request
from inspector.machine import Event, Machine, State
from inspector.store.outbox import DRIFT
from inspector.worker.tasks import Tasks
from tests import seed
from tests.fakes.ironic import FakeIronic
from tests.unit.test_drift import changed_server


class Counted:
    """Records the drift summaries the tasks report (the worker's metrics)."""

    def __init__(self) -> None:
        self.summaries: list[dict] = []

    def drift_found(self, summary: dict) -> None:
        self.summaries.append(summary)


@pytest.fixture
def ironic():
    return FakeIronic()


def introspect(store, tasks, uuid: str, payload: dict, seconds_ago: int, *, reapply=False):
    """One introspection of `uuid` from processing to its end task, `seconds_ago` ago."""
    when = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    when -= datetime.timedelta(seconds=seconds_ago)
    try:
        store.get_node(uuid)
    except Exception:
        node = seed.node(store, uuid, State.PROCESSING, started_at=when)
    else:
        node = seed.move(store, uuid, State.PROCESSING, started_at=when, finished_at=None)
    store.store_data(uuid, payload, processed=False)
    tasks.process(node, Request(node_uuid=uuid, event=Event.CONTINUE), power_off=not reapply)
    ended = seed.move(store, uuid, State.FINISHED, finished_at=when)
    end = Machine().advance(State.PROCESSING, Event.FINISH)
    tasks.run(ended, Request(node_uuid=uuid, event=Event.FINISH), end)
    return ended


def test_the_second_introspection_drifts_from_the_first(store, ironic, conf):
    conf.set_override("store_data", "database", group="processing")
    store.notify = True
    old, new = changed_server()
    node = ironic.add_node(power_state="power off")
    ironic.add_port(node.uuid, old["inventory"]["interfaces"][0]["mac_address"])
    metrics = Counted()
    tasks = Tasks(store, ironic, conf, metrics=metrics)

    introspect(store, tasks, node.uuid, old, 20)
    first = store.get_data(node.uuid, processed=True)["drift"]
    assert first["base"] is None and first["changes"] == []
    assert metrics.summaries == []

    introspect(store, tasks, node.uuid, new, 10)
    history = store.history_page(node.uuid, limit=10)
    assert [entry.state for entry in history] == ["finished", "finished"]
    second = store.get_data(node.uuid, processed=True)["drift"]
    assert second["base"] == history[1].id
    assert [c["path"] for c in second["changes"]] == [
        "firmware.version",
        "disks[/dev/sdb]",
        "nics[52:54:00:aa:bb:09]",
    ]
    # The entry keeps this introspection's data, drift included.
    assert store.history_data(node.uuid, history[0].id)[1]["processed"]["drift"] == second
    assert [s["disks"] for s in metrics.summaries] == [1]
    notes = [n for n in store.due_notifications() if n.event_type == DRIFT]
    assert [n.payload["summary"]["nics"] for n in notes] == [1]


def test_a_reapply_replaces_its_entry_and_notifies_nothing_new(store, ironic, conf):
    conf.set_override("store_data", "database", group="processing")
    old, new = changed_server()
    node = ironic.add_node(power_state="power off")
    ironic.add_port(node.uuid, old["inventory"]["interfaces"][0]["mac_address"])
    metrics = Counted()
    tasks = Tasks(store, ironic, conf, metrics=metrics)
    introspect(store, tasks, node.uuid, old, 20)
    ended = introspect(store, tasks, node.uuid, new, 10)
    reapply = Machine().advance(State.FINISHED, Event.REAPPLY)
    tasks.run(ended, Request(node_uuid=node.uuid, event=Event.REAPPLY), reapply)
    end = Machine().advance(State.REAPPLYING, Event.FINISH)
    tasks.run(ended, Request(node_uuid=node.uuid, event=Event.FINISH), end)
    history = store.history_page(node.uuid, limit=10)
    assert len(history) == 2
    assert store.get_data(node.uuid, processed=True)["drift"]["base"] == history[1].id
    assert len(metrics.summaries) == 1  # the introspection's, not the reapply's


def test_without_stored_data_nothing_is_kept_and_nothing_drifts(store, ironic, conf):
    old, new = changed_server()
    node = ironic.add_node(power_state="power off")
    ironic.add_port(node.uuid, old["inventory"]["interfaces"][0]["mac_address"])
    tasks = Tasks(store, ironic, conf)
    assert not tasks.has_work(Machine().advance(State.PROCESSING, Event.FINISH))
    introspect(store, tasks, node.uuid, old, 20)
    introspect(store, tasks, node.uuid, new, 10)
    assert store.history_page(node.uuid, limit=10) == []
