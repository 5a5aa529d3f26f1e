"""The Ironic history task on a fake Ironic and a SQLite store: Ironic's inspections kept
as history entries (source `ironic`) with their drift, each read once, one listing a run."""

import datetime

import pytest

from inspector.periodic.ironic_history import IronicHistory
from inspector.periodic.tasks import CleanUp
from inspector.store.outbox import DRIFT
from tests.fakes.ironic import FakeIronic
from tests.unit.conftest import RecordingQueue
from tests.unit.test_drift import changed_server
from tests.unit.test_periodic import leadership

T0 = datetime.datetime(2026, 11, 28, 12, 0, 0, 123456)


@pytest.fixture
def ironic():
    return FakeIronic()


def test_two_ironic_inspections_make_a_history_and_a_drift(store, ironic):
    store.notify = True
    summaries = []
    task = IronicHistory(store, ironic, drift_found=summaries.append)
    old, new = changed_server()
    node = ironic.add_node().uuid
    other = ironic.add_node().uuid
    ironic.inspected(node, T0, old)
    ironic.inspected(other, T0 + datetime.timedelta(seconds=1), old)
    assert task.run(leadership(store)) == "2 Ironic inspections kept, 0 with drift"
    ironic.inspected(node, T0 + datetime.timedelta(minutes=5), new)
    assert task.run(leadership(store)) == "1 Ironic inspections kept, 1 with drift"
    assert task.run(leadership(store)) == "0 Ironic inspections kept, 0 with drift"

    history = store.history_page(node, limit=10)
    assert [(e.source, e.state) for e in history] == [("ironic", "finished")] * 2
    assert history[0].finished_at == T0 + datetime.timedelta(minutes=5)
    processed = store.history_data(node, history[0].id)[1]["processed"]
    assert processed["drift"]["base"] == history[1].id
    assert [c["path"] for c in processed["drift"]["changes"]] == [
        "firmware.version",
        "disks[/dev/sdb]",
        "nics[52:54:00:aa:bb:09]",
    ]
    # Ironic's plugin data is kept beside the inventory, as our ramdisk data is.
    assert processed["pci_devices"] == new["pci_devices"]
    assert [s["nics"] for s in summaries] == [1]
    assert [n.payload["node_uuid"] for n in store.due_notifications() if n.event_type == DRIFT] == [
        node
    ]
    # Each inspection's inventory was read once: none again for what was kept.
    assert len(ironic.calls_to("get_inventory")) == 3
    assert len(ironic.calls_to("inspected_since")) == 3


def test_a_node_without_inventory_is_skipped(store, ironic):
    node = ironic.add_node().uuid
    ironic.inspected(node, T0, changed_server()[0])
    ironic.inspections[node][1]["inventory"] = None
    assert IronicHistory(store, ironic).run(leadership(store)).startswith("0 Ironic")
    assert store.history_page(node, limit=10) == []


@pytest.mark.parametrize(
    ("enabled", "store_data", "expected"),
    [(True, "database", True), (True, "none", False), (False, "database", False)],
)
def test_the_task_runs_when_enabled_with_stored_data(
    store, ironic, conf, enabled, store_data, expected
):
    conf.set_override("enabled", enabled, group="ironic_history")
    conf.set_override("store_data", store_data, group="processing")
    names = [task.name for task in CleanUp(store, RecordingQueue(), ironic, conf).tasks()]
    assert ("ironic_history" in names) is expected
