"""`inspector status` collectors: Ganeti-style reports with status codes that OR into
the exit status."""

from datetime import datetime, timedelta

from inspector.cmd import collectors
from inspector.cmd.collectors import FIXING, OK, OPERATOR, UNKNOWN
from inspector.store.census import Census

NOW = datetime(2026, 11, 22, 12, 0, 0)


def census(**kwargs) -> Census:
    values = {
        "nodes_by_state": {"waiting": 2, "finished": 5},
        "leaders": {"periodic": ("host-a-1", 3, NOW)},
        "last_runs": {
            task: (NOW - timedelta(seconds=5), NOW, "ok")
            for task in ("timeout", "ironic_sync", "expiry")
        },
        "notifications_pending": 0,
    }
    values.update(kwargs)
    return Census(**values)


PERIODS = {"timeout": 30.0, "ironic_sync": 30.0, "expiry": 30.0}


def test_report_format_is_ganetis():
    report = collectors.queue(4, None).to_dict()
    assert set(report) == {
        "name",
        "version",
        "format_version",
        "timestamp",
        "category",
        "kind",
        "data",
    }
    assert report["version"] == "B" and report["kind"] == 1
    assert report["data"] == {"status": {"code": 0, "message": ""}, "depth": 4}


def test_healthy_cluster_exits_zero():
    reports = [
        collectors.database(census(), None),
        collectors.nodes(census()),
        collectors.singletons(census(), {"periodic": ["host-a-1", "host-b-2"]}, None),
        collectors.periodic(census(), PERIODS, 3, NOW),
        collectors.notifications(census()),
        collectors.firewall([{"member": "a", "open": True, "driver": "nftables"}], None),
    ]
    assert collectors.exit_code(reports) == OK
    assert reports[1].data["active"] == 2
    assert "leader host-a-1 (term 3), 2 member(s)" in collectors.summary(reports)


def test_a_leader_that_left_is_being_fixed():
    report = collectors.singletons(census(), {"periodic": ["host-b-2"]}, None)
    assert report.code == FIXING
    assert "host-a-1 left" in report.data["status"]["message"]


def test_no_worker_needs_an_operator():
    assert collectors.singletons(census(), {"periodic": []}, None).code == OPERATOR


def test_unreadable_groups_are_unknown():
    assert collectors.singletons(census(), None, "DLM down").code == UNKNOWN


def test_late_periodic_tasks():
    late = census(last_runs={"timeout": (NOW - timedelta(seconds=80), NOW, "ok")})
    report = collectors.periodic(late, {"timeout": 30.0}, 3, NOW)
    assert report.code == FIXING
    stale = census(last_runs={"timeout": (NOW - timedelta(hours=1), NOW, "ok")})
    assert collectors.periodic(stale, {"timeout": 30.0}, 3, NOW).code == OPERATOR
    assert collectors.periodic(census(last_runs={}), {"timeout": 30.0}, 3, NOW).code == UNKNOWN


def test_two_open_pxe_services_need_an_operator():
    hosts = [
        {"member": "a", "open": True, "driver": "nftables"},
        {"member": "b", "open": True, "driver": "nftables"},
    ]
    assert collectors.firewall(hosts, None).code == OPERATOR
    closed = [{"member": "a", "open": False, "driver": "nftables"}]
    assert collectors.firewall(closed, None).code == FIXING
    assert collectors.firewall(None, "no channel").code == UNKNOWN


def test_codes_or_together():
    reports = [
        collectors.notifications(census(notifications_pending=3)),
        collectors.database(None, "connection refused"),
        collectors.firewall(None, "no channel"),
    ]
    assert collectors.exit_code(reports) == FIXING | OPERATOR | UNKNOWN
