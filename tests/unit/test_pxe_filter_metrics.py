"""The PXE filter's metrics: the lag from Ironic's change to the leader's rule applied
(injected clock), notifications and polls counted, the gauges read from the firewall's
status at scrape time, and the role a manager reports (leader, follower, closed)."""

import pytest

from inspector.firewall.ironic_source import IronicInspections
from inspector.firewall.lists import MacList
from inspector.firewall.metrics import LAG_WINDOW, FilterMetrics
from inspector.firewall.observer import moment
from tests.unit.test_firewall_ironic_source import A, Clock
from tests.unit.test_firewall_manager import lead_in_thread, started_leader, wait_for
from tests.unit.test_worker_metrics import status as worker_status

STAMP = "2026-11-28T12:00:00+00:00"


@pytest.fixture
def clock():
    clock = Clock()
    clock.now = moment(STAMP)
    return clock


@pytest.fixture
def metrics(clock):
    metrics = FilterMetrics(clock=clock)
    metrics.leading = lambda: True
    return metrics


def value(metrics: FilterMetrics, name: str, **labels) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_the_lag_runs_from_ironics_change_to_the_next_apply(metrics, clock):
    metrics.changed(clock.now - 0.3)
    metrics.changed(None)  # a change without a timestamp: no lag
    clock.now += 0.4
    metrics.applied()
    metrics.applied()  # nothing pending: nothing more
    assert value(metrics, "inspector_pxe_filter_lag_seconds_count") == 1
    assert value(metrics, "inspector_pxe_filter_lag_seconds_sum") == pytest.approx(0.7)
    assert metrics.last_lag == pytest.approx(0.7)


def test_a_follower_or_a_change_from_long_ago_has_no_lag(metrics, clock):
    metrics.changed(clock.now - LAG_WINDOW - 1)
    metrics.leading = lambda: False
    metrics.changed(clock.now)
    metrics.applied()
    assert value(metrics, "inspector_pxe_filter_lag_seconds_count") == 0
    assert metrics.last_lag is None


def test_ironic_timestamps_as_ironic_writes_them():
    assert moment("2026-11-28T12:00:00") == moment(STAMP)  # no zone: UTC
    assert moment("2026-11-28T12:00:00.500000+00:00") == moment(STAMP) + 0.5
    assert moment("yesterday") is None and moment(None) is None and moment(5) is None


def test_the_view_counts_notifications_and_reports_inspections_changing(metrics, clock):
    view = IronicInspections(
        MacList("whitelist", clock=clock), MacList("blacklist", clock=clock), observer=metrics
    )
    node = {"uuid": A, "inspect_interface": "agent", "provision_updated_at": STAMP}
    view.hear(
        "baremetal.node.provision_set.end",
        {"ironic_object.data": {**node, "provision_state": "inspect wait"}},
    )
    view.hear(
        "baremetal.node.provision_set.end",
        {"ironic_object.data": {**node, "provision_state": "inspect wait"}},
    )
    view.hear("baremetal.port.create.end", {"ironic_object.data": {}})
    clock.now += 0.2
    metrics.applied()
    assert value(metrics, "inspector_pxe_filter_notifications_total") == 3
    # Only the first put the node under inspection: one change, 0.2 s after Ironic's.
    assert value(metrics, "inspector_pxe_filter_lag_seconds_count") == 1
    assert metrics.last_lag == pytest.approx(0.2)


def test_polls_and_ironics_answer_times_by_listing(metrics):
    metrics.polled("nodes", 0.004)
    metrics.polled("nodes", 0.006)
    metrics.polled("ports", 2.5)
    assert value(metrics, "inspector_pxe_filter_ironic_seconds_count", listing="nodes") == 2
    assert value(metrics, "inspector_pxe_filter_ironic_seconds_sum", listing="ports") == 2.5


def test_the_gauges_follow_the_firewalls_status(metrics, clock):
    status = worker_status(
        driver="nftables",
        term=7,
        whitelist=2,
        blacklist=9,
        whitelist_synced_at=clock.now - 1,
        blacklist_synced_at=clock.now - 12,
        role="leader",
    )
    assert value(metrics, "inspector_pxe_filter_leader_term") is None  # no status yet
    metrics.status = lambda: status
    assert value(metrics, "inspector_pxe_filter_role", role="leader") == 1
    assert value(metrics, "inspector_pxe_filter_role", role="closed") == 0
    assert value(metrics, "inspector_pxe_filter_leader_term") == 7
    assert value(metrics, "inspector_pxe_filter_macs", list="allowed") == 2
    assert value(metrics, "inspector_pxe_filter_macs", list="denied") == 9
    assert value(metrics, "inspector_pxe_filter_reconcile_age_seconds", list="blacklist") == 12


def test_a_manager_says_leader_follower_or_closed():
    manager, _ = started_leader()
    manager.start()
    try:
        assert manager.status().role == "follower"
        leadership, thread = lead_in_thread(manager)
        wait_for(lambda: manager.status().role == "leader", 5, 0.01, "leading")
        leadership.reset.set()
        thread.join(5)
        assert manager.status().role == "follower"
        manager.lifecycle.stop("test over")
        assert manager.status().role == "closed"
    finally:
        manager.stop()
