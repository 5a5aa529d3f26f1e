"""`inspector status` collectors: Ganeti-style reports with status codes that OR into
the exit status."""

from datetime import datetime, timedelta

from inspector.cmd import collectors
from inspector.cmd.collectors import FIXING, OK, OPERATOR, UNKNOWN
from inspector.coordination import backends
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


def test_the_in_process_dlm_is_one_process_not_unknown():
    report = collectors.singletons(census(), None, None, one_process=True)
    assert report.code == OK
    assert report.data["status"]["message"].startswith("one process (in-process DLM)")
    assert collectors.singletons(census(), None, "DLM down", one_process=False).code == UNKNOWN


def test_no_firewall_to_check_with_the_noop_driver():
    report = collectors.firewall(None, "no channel", not_applicable="noop PXE driver")
    assert (report.code, report.data["status"]["message"]) == (
        OK,
        "not applicable: noop PXE driver",
    )


def test_a_queue_depth_that_cannot_be_known_is_not_made_up():
    report = collectors.queue(None, None, unmeasurable="in-process queue")
    assert report.code == OK and report.data["depth"] is None
    line = collectors.summary([report])
    assert line == "queue          ok: depth not measurable (in-process queue)\n"


def test_requests_in_flight_are_counted_apart():
    report = collectors.queue(2, None, in_flight=1)
    assert report.data["depth"] == 2 and report.data["in_flight"] == 1
    assert collectors.summary([report]) == "queue          ok (depth 2, 1 in flight)\n"
    assert "in_flight" not in collectors.queue(2, None).data  # the broker does not say


def test_a_dlm_with_a_caveat_is_said_in_the_singletons_line():
    caveat = backends.caveat("memcached://127.0.0.1:11211")
    assert caveat and "evicts" in caveat
    report = collectors.singletons(census(), {"periodic": ["host-a-1"]}, None, caveat=caveat)
    assert report.code == OK
    assert report.data["status"]["message"] == f"DLM caveat: {caveat}"
    assert backends.caveat("redis://127.0.0.1:6379") is None
