"""bench/pxe_filter.py's parts that measure nothing: reading a hostsdir record, grouping
the proxy's calls into reconciles, naming SQL statements, the filters' configurations,
and the report (ratios, targets, the section and the plot)."""

import pathlib

from bench.fleet.proxy import Call
from bench.pxe import filters, ironic_site, latency, report
from bench.pxe.counted_ironic_pxe_filter import _kind


def test_a_hostsdir_record_reads_as_ironic_pxe_filter_writes_it(tmp_path):
    mac = "52:55:00:00:00:01"
    assert filters.entry(tmp_path, mac) is None
    (tmp_path / mac).write_text(f"{mac}\n")
    assert filters.entry(tmp_path, mac) == "allow"
    (tmp_path / mac).write_text(f"{mac},ignore\n")
    assert filters.entry(tmp_path, mac) == "deny"
    (tmp_path / mac).write_text("")  # being written
    assert filters.entry(tmp_path, mac) is None


def _call(kind: str, sent: float, seconds: float) -> Call:
    return Call(kind, None, seconds, 200, True, sent + seconds)


def test_calls_less_than_the_gap_apart_are_one_reconcile():
    calls = [
        _call("GET nodes", 10.0, 0.2),
        _call("GET ports", 10.3, 0.5),  # sent after the first answer
        _call("GET ports", 10.9, 0.4),
        _call("GET nodes", 16.0, 0.1),  # the next period's
    ]
    first, second = filters.reconciles(list(reversed(calls)))
    assert first["calls"] == 3
    assert first["kinds"] == ["GET nodes", "GET ports"]
    assert abs(first["wall"] - 1.3) < 1e-9
    assert abs(first["ironic_seconds"] - 1.1) < 1e-9
    assert second["calls"] == 1 and second["at"] == 16.0
    # One kind alone: the port listing apart from the nodes' reconciles around it.
    (ports,) = filters.reconciles(calls, filters.PORTS)
    assert ports["calls"] == 2 and abs(ports["wall"] - 1.0) < 1e-9
    assert [g["at"] for g in filters.reconciles(calls, filters.NODES)] == [10.0, 16.0]


def test_sql_statements_are_named_by_verb_and_table():
    assert _kind("SELECT nodes.id, nodes.uuid \nFROM nodes \nWHERE x") == "SELECT nodes"
    assert _kind("BEGIN") == "BEGIN"
    assert _kind("") == ""


def test_ours_listens_to_ironic_only_with_notifications(tmp_path):
    common = {
        "ironic_url": "http://127.0.0.1:1",
        "rabbitmq_url": "amqp://u:p@127.0.0.1:5673//",
        "redis_url": "redis://127.0.0.1:6380/0",
        "topic": "t",
    }
    with_events = filters.ours_config(tmp_path, period=5.0, **common)
    assert "ironic_topic = t" in with_events
    assert "channel_url = rabbit://u:p@127.0.0.1:5673//" in with_events
    assert "whitelist_sync_period = 5.0" in with_events
    assert "backend_url = redis://127.0.0.1:6380?db=9" in with_events
    polling = filters.ours_config(tmp_path, period=None, notifications=False, **common)
    assert "ironic_topic" not in polling
    assert "sync_period" not in polling  # the defaults


def test_rabbitmq_urls_are_spelt_for_oslo_messaging():
    assert ironic_site.oslo_url("amqp://u:p@h:1//") == "rabbit://u:p@h:1//"
    assert ironic_site.oslo_url("rabbit://u:p@h:1/") == "rabbit://u:p@h:1/"


def _run(name: str, theirs: list[float], ours: list[float]) -> dict:
    def figures(samples: list[float], period: float, notifications: bool) -> dict:
        return {
            "allow": latency.summary(samples, 3),
            "deny": latency.summary(samples, 3),
            "allow_after_ironic": latency.summary([v / 2 for v in samples], 3),
            "deny_after_ironic": latency.summary([v / 2 for v in samples], 3),
            "period": period,
            "notifications": notifications,
        }

    return {
        "name": name,
        "notifications": True,
        "filters": {
            report.THEIRS: figures(theirs, 45.0, False),
            report.OURS: figures(ours, 15.0, True),
        },
        "ironic": {"allow": latency.summary([0.1], 1), "deny": latency.summary([0.3], 1)},
    }


def _reconcile(nodes: int, wall: float, ports_wall: float) -> dict:
    def figures(name: str, wall: float, requests: int, kind: str) -> dict:
        return {
            "filter": name,
            "period": 5.0,
            "wall": {"median": wall, "max": wall},
            "cpu_per_reconcile": 0.1,
            "ironic_cpu_per_reconcile": 0.2,
            "requests_per_reconcile": requests,
            "requests_kind": kind,
        }

    ours = figures(report.OURS, wall, 2 + nodes // 1000 + 1, "REST calls") | {
        "reconcile_calls": 2,
        "ports": {"wall": {"median": ports_wall, "max": ports_wall}, "calls": nodes // 1000 + 1},
        "full_wall": {"median": ports_wall + 0.01, "max": ports_wall + 0.01},
    }
    return {
        "nodes": nodes,
        report.OURS: ours,
        report.THEIRS: figures(report.THEIRS, 0.5, 10, "SQL statements"),
    }


def test_the_report_compares_and_checks_the_targets(tmp_path):
    results = {
        "machine": {"cpus": 2, "when": "now"},
        "latency_nodes": 3,
        "latency": [_run("defaults", [10.0, 20.0, 40.0], [0.1, 0.2, 0.4])],
        "reconcile": [_reconcile(1000, 0.02, 0.3), _reconcile(10000, 0.05, 2.49)],
    }
    ratios = report.ratios(results)
    assert ratios["defaults allow median: theirs / ours"] == 100.0
    assert ratios["10000 nodes full reconcile wall: ours / theirs"] == 5.0
    checks = {c["target"]: c["met"] for c in report.targets(results)}
    assert checks == {
        "defaults: ours allows within 1 s (max)": True,
        "the reconcile of the nodes under inspection at 10,000 nodes under 2 s wall (max)": True,
        "a full reconcile (with every port) at 10,000 nodes under 2 s wall (max)": False,
        "a full reconcile at 10,000 nodes: at most 15 calls (paginated listings)": True,
    }
    results["latency"][0]["filters"][report.OURS]["allow"]["missed"] = 1
    assert not report.targets(results)[0]["met"]

    doc = tmp_path / "docs" / "performance.md"
    doc.parent.mkdir()
    doc.write_text(f"# Performance\n\nbefore\n{report.BEGIN}\nold\n{report.END}\nafter\n")
    image = tmp_path / "docs" / "images" / "pxe-filter.png"
    report.update_doc(results, doc, image)
    text = doc.read_text()
    assert "old" not in text and "before" in text and "after" in text
    assert "| 10,000 | inspector pxe-filter | nodes under inspection | 5 | 0.050 |" in text
    assert "| 10,000 | inspector pxe-filter | every port | 5 | 2.490 | 2.490 | | | 11 |" in text
    assert "| 10,000 | inspector pxe-filter | both (full reconcile) | 5 | 2.500 |" in text
    assert "| 10,000 | ironic-pxe-filter | full sync | 5 | 0.500 |" in text
    assert "| defaults | inspector pxe-filter | 15 | yes | 0.20 / 0.40 |" in text
    assert "| 0.10 / 0.20 | 0.10 / 0.20 | 1 |" in text  # after Ironic; 1 missed above
    assert "`continue_inspection` to `manageable` 0.30 s median" in text
    assert "](images/pxe-filter.png)" in text
    assert image.read_bytes().startswith(b"\x89PNG")
    assert pathlib.Path(image).stat().st_size > 1000
