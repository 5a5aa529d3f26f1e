"""bench/fleet: tables, targets, the section in the doc and the plots; how the command
merges a run into earlier results; how often a batch sweeps the listing."""

import copy
import pathlib

import pytest

from bench.fleet import batch, report, tables, targets
from bench.fleet.__main__ import merge
from bench.fleet.proxy import Call, summary


def _scenario(name: str, target: str, **fields: object) -> dict:
    scenario = {
        "name": name,
        "target": target,
        "enrolled": 1000,
        "batch": 40,
        "concurrency": 8,
        "workers": 1,
        "worker_threads": 8,
        "killed_worker": False,
        "boot_delay": 0.0,
        "batch_seconds": 12.0,
        "throughput": 3.33,
        "finished": 40,
        "errors": 0,
        "unfinished": 0,
        "introspection_seconds": {"p50": 1.2, "p95": 2.0, "p99": 2.4, "max": 2.5},
        "continue_ms": {"p50": 8.0, "p95": 20.0, "p99": 31.0, "max": 40.0, "count": 40},
        "ironic_calls_per_introspection": 6.0,
        "ironic_calls_by_kind": {"GET node": 1.0, "PATCH node": 1.0},
        "ironic_list_all_calls": 0,
        "ironic_seconds_per_introspection": 0.9,
        "cpu_ms_per_introspection": 14.2,
        "backend_seconds_per_introspection": {
            "ironic": 0.9,
            "database": 0.05,
            "dlm": 0.01,
            "queue": 0.02,
        },
        "histograms": {
            "continue_ms": [5.0, 8.0, 9.5, 31.0, 40.0],
            "introspection_seconds": [0.8, 1.2, 2.0, 2.5],
        },
    }
    scenario.update(fields)
    return scenario


@pytest.fixture
def results() -> dict:
    peer = {"p50": 3200.0, "p95": 6900.0, "p99": 7500.0, "max": 8000.0, "count": 40}
    return {
        "machine": {
            "cpus": 2,
            "python": "3.11.7",
            "ironic": "39.0.0",
            "peer": "ironic-inspector 12.5.0",
            "when": "2026-11-22T09:00:00+00:00",
        },
        "command": "python -m bench.fleet --nodes 1000",
        "scenarios": [
            _scenario("batch-40", "inspector", batch_seconds=13.0),
            _scenario("batch-40", "inspector", workers=2, batch_seconds=12.5, throughput=3.2),
            _scenario(
                "batch-40",
                "ironic-inspector",
                workers=None,
                batch_seconds=30.0,
                throughput=1.33,
                continue_ms=peer,
                ironic_calls_per_introspection=12.0,
                ironic_list_all_calls=1,
                histograms={"continue_ms": [1200.0, 3200.0, 6900.0]},
            ),
            _scenario("batch-40", "ironic-floor", batch_seconds=12.7, histograms={}),
            _scenario("batch-200-killed", "inspector", batch=200, killed_worker=True),
            _scenario("engine", "engine", workers=1, throughput=120.0, ceiling_per_second=200.0),
            _scenario(
                "engine",
                "engine",
                workers=2,
                throughput=180.0,
                ceiling_per_second=300.0,
                machine_cpu_ms_per_introspection=10.5,
                machine_busy=0.93,
            ),
        ],
        "targets": [
            {"name": "within 1.25x of the floor", "value": 1.02, "limit": 1.25, "met": True},
            {
                "name": "/v1/continue p99 under 50 ms",
                "value": 61.0,
                "limit": 50.0,
                "met": False,
                "detail": "batch-1000",
            },
        ],
    }


def test_markdown_has_every_table_and_the_targets(results: dict) -> None:
    text = report.markdown(results)
    assert text.startswith("## Fleet (`bench/fleet`)")
    assert "2 CPUs, Python 3.11.7, Ironic 39.0.0, peer ironic-inspector 12.5.0" in text
    assert "python -m bench.fleet --nodes 1000" in text
    for heading in (
        "### Side by side: 40 introspections at concurrency 8",
        "### Batches",
        "### Engine alone",
        "### Where the time goes, per introspection",
        "### Targets",
    ):
        assert heading in text
    # The floor comparison: ratio to the floor and the peer's figures.
    assert "| ours (inspector), 1 worker | 13.0 | 1.02 |" in text
    assert "| ironic-inspector 12.5.0 | 30.0 | 2.36 | 1.33 | 3,200.0 | 7,500.0 | 12.0 |" in text
    assert "| Ironic floor | 12.7 | 1.00 |" in text
    assert "| ours (inspector), 1 worker, worker killed |" in text
    assert "| engine | 2 | 8 | 180.0 | 300.0 | 1.67 | 14.2 | 10.5 | 93% |" in text
    # Runs from before the machine's CPU was recorded show dashes.
    assert "| engine | 1 | 8 | 120.0 | 200.0 | 1.67 | 14.2 | - | - |" in text
    assert "| GET node | 1.00 |" in text
    assert "| within 1.25x of the floor | 1.02 | 1.25 | met |" in text
    assert "| /v1/continue p99 under 50 ms | 61.00 | 50.00 | **not met** | batch-1000 |" in text
    for image in ("fleet-throughput.png", "fleet-latency.png", "fleet-batch.png"):
        assert f"(images/{image})" in text


def test_markdown_without_optional_parts() -> None:
    text = report.markdown({"scenarios": [{"name": "x", "target": "inspector"}]})
    assert "### Batches" in text
    assert "### Targets" not in text and "### Side by side" not in text
    assert "![" not in text


def test_update_doc_replaces_only_its_section(results: dict, tmp_path: pathlib.Path) -> None:
    doc = tmp_path / "docs" / "performance.md"
    images = tmp_path / "docs" / "images"
    doc.parent.mkdir()
    before = "# Performance\n\nIntro.\n\n<!-- other begin -->\nother\n<!-- other end -->\n"
    doc.write_text(before)

    report.update_doc(results, doc, images)
    first = doc.read_text()
    assert first.startswith(before)
    assert first.count(report.BEGIN) == 1 and first.rstrip().endswith(report.END)
    assert "(images/fleet-batch.png)" in first
    assert (images / "fleet-batch.png").stat().st_size > 0

    doc.write_text(first + "\nAfter the section.\n")
    changed = copy.deepcopy(results)
    changed["command"] = "python -m bench.fleet --second-run"
    report.update_doc(changed, doc, images)
    second = doc.read_text()
    assert second.startswith(before) and second.endswith("\nAfter the section.\n")
    assert second.count(report.BEGIN) == 1 and second.count(report.END) == 1
    assert "--second-run" in second and "--nodes 1000" not in second


def test_plots_write_non_empty_pngs(results: dict, tmp_path: pathlib.Path) -> None:
    written = report.plots(results, tmp_path / "images")
    assert sorted(path.name for path in written) == [
        "fleet-batch.png",
        "fleet-latency.png",
        "fleet-throughput.png",
    ]
    for path in written:
        assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert path.stat().st_size > 1000


def test_plots_skip_what_has_no_data(tmp_path: pathlib.Path) -> None:
    only_peer = {"scenarios": [_scenario("b", "ironic-inspector", histograms={})]}
    assert report.plots(only_peer, tmp_path) == []
    assert list(tmp_path.iterdir()) == []


def test_sparse_results_still_make_a_report(tmp_path: pathlib.Path) -> None:
    """Optional fields and whole scenarios missing: dashes, no exception."""
    results = {
        "scenarios": [
            {"name": "a", "target": "inspector", "workers": 1, "throughput": 2.0},
            {"name": "b", "target": "inspector", "enrolled": 10, "histograms": {"continue_ms": []}},
            {"name": "c", "target": "ironic-floor"},
            {"name": "d", "target": "ironic-inspector", "batch": 5, "continue_ms": {}},
            {"name": "e", "target": "engine", "workers": 2},
        ],
        "targets": [{"name": "unknown yet"}],
    }
    text = report.markdown(results)
    assert "| ours (inspector), 1 worker | - | - | 2.00 |" in text
    assert "| unknown yet | - | - | - |  |" in text
    assert [p.name for p in report.plots(results, tmp_path)] == [
        "fleet-throughput.png",
        "fleet-batch.png",
    ]


def test_a_single_introspection_shows_its_steps():
    steps = [
        {"step": "start request answered", "at_seconds": 0.012, "took_seconds": 0.0},
        {"step": "Ironic: PUT node/states/power", "at_seconds": 0.31, "took_seconds": 0.05},
    ]
    single = {"name": "single", "target": "inspector", "workers": 1, "batch": 1, "steps": steps}
    text = report.markdown({"scenarios": [single]})
    assert "### One introspection, step by step: ours (inspector), 1 worker" in text
    assert "| Ironic: PUT node/states/power | 0.310 | 0.050 |" in text


def test_calls_answered_409_are_counted_apart_from_those_ironic_carried_out() -> None:
    node = "fleet-00001"
    kinds = ["GET node", "GET ports", "PUT node/management/boot_device"]
    kinds += ["PUT node/states/power", "PATCH node", "PUT node/states/power"]
    calls = [Call(kind, node, 0.01, 200, False, 0.0) for kind in kinds]
    calls.append(Call("PATCH node", node, 0.01, 409, False, 0.0))
    counted = summary(calls, {node}, {})
    assert counted["ironic_calls_per_introspection"] == 7
    assert counted["ironic_refused_calls_per_introspection"] == 1
    scenario = {"name": "compare", "target": "inspector", **counted}
    found = targets.evaluate({"scenarios": [scenario]})
    (calls_target,) = [t for t in found if t["name"].startswith("no more Ironic calls")]
    assert calls_target["value"] == 6 and calls_target["met"]
    assert "1.00 answered 409" in calls_target["detail"]


def test_merge_replaces_only_the_scenarios_run_again() -> None:
    def run(*scenarios: dict, command: str) -> dict:
        return {"scenarios": list(scenarios), "command": command, "machine": {"when": command}}

    earlier = run(
        _scenario("batch-200", "inspector"),
        _scenario("batch-200", "ironic-inspector"),
        _scenario("batch-1000", "inspector"),
        _scenario("batch-1000", "inspector", workers=2),
        _scenario("batch-1000", "inspector", enrolled=10000),
        command="first",
    )
    results = run(_scenario("batch-1000", "inspector", batch_seconds=99.0), command="second")
    merge(results, earlier)
    kept = [
        (s["name"], s["target"], s["workers"], s["batch_seconds"]) for s in results["scenarios"]
    ]
    assert kept == [
        ("batch-200", "inspector", 1, 12.0),
        ("batch-200", "ironic-inspector", 1, 12.0),
        ("batch-1000", "inspector", 2, 12.0),
        ("batch-1000", "inspector", 1, 12.0),
        ("batch-1000", "inspector", 1, 99.0),
    ]
    assert results["command"] == "first\nsecond"


def test_an_engine_run_replaces_the_earlier_one_whatever_the_site() -> None:
    earlier = {
        "scenarios": [_scenario("engine", "engine", batch_seconds=7.0)],
        "command": "first",
        "machine": {},
    }
    results = {
        "scenarios": [_scenario("engine", "engine", enrolled=10000, batch_seconds=9.0)],
        "command": "second",
        "machine": {},
    }
    merge(results, earlier)
    assert [s["batch_seconds"] for s in results["scenarios"]] == [9.0]


def test_the_continue_target_reads_the_worst_run_of_the_largest_batch() -> None:
    def batch(
        workers: int, enrolled: int, p99: float, size: int = 1000, name: str = "batch"
    ) -> dict:
        continue_ms = {"p50": 5.0, "p95": 20.0, "p99": p99, "max": p99, "count": size}
        return _scenario(
            f"{name}-{size}",
            "inspector",
            batch=size,
            workers=workers,
            enrolled=enrolled,
            continue_ms=continue_ms,
        )

    scenarios = [
        batch(1, 1000, 80.0, size=200),
        batch(1, 1000, 40.5),
        batch(2, 1000, 51.7),
        batch(1, 10000, 30.0),
    ]

    def judged(scenarios: list[dict]) -> dict:
        [target] = [
            t
            for t in targets.evaluate({"scenarios": scenarios})
            if t["name"].startswith("/v1/continue")
        ]
        return target

    target = judged(scenarios)
    assert (target["value"], target["met"]) == (51.7, False)
    assert "batch-1000: 1000 nodes of 1000 enrolled, 2 worker processes" in target["detail"]
    assert "40.5 ms (batch-1000, 1 workers, 1000 enrolled)" in target["detail"]
    # The same batch with a worker killed, and on the local cluster, count too.
    cluster = batch(3, 1000, 60.0, name="cluster")
    target = judged([*scenarios, batch(2, 1000, 45.0, name="kill"), cluster])
    assert target["value"] == 60.0
    assert "cluster-1000: 1000 nodes of 1000 enrolled, 3 worker processes" in target["detail"]
    assert "45.0 ms (kill-1000, 2 workers, 1000 enrolled)" in target["detail"]


def test_each_compare_run_is_judged_on_its_own() -> None:
    scenarios = [
        _scenario("compare", "inspector", batch_seconds=10.0),
        _scenario("compare", "ironic-floor", batch_seconds=10.0),
        _scenario("compare", "ironic-inspector", batch_seconds=15.0),
        _scenario("compare-boot-1s", "inspector", enrolled=10000, boot_delay=1.0),
        _scenario("compare-boot-1s", "ironic-floor", enrolled=10000, boot_delay=1.0),
        _scenario("compare", "ironic-inspector", enrolled=10000, batch_seconds=36.0),
        _scenario("compare", "inspector", enrolled=10000, batch_seconds=12.0),
        _scenario("compare", "ironic-floor", enrolled=10000, batch_seconds=13.0),
    ]
    found = targets.evaluate({"scenarios": scenarios})
    by_name = {t["name"]: t for t in found}
    small = by_name["at least 2x faster than ironic-inspector (1,000 enrolled, boot 0 s)"]
    assert (small["value"], small["met"]) == (1.5, False)
    assert "ironic-inspector itself 1.50x the floor" in small["detail"]
    large = by_name["at least 2x faster than ironic-inspector (10,000 enrolled, boot 0 s)"]
    assert (large["value"], large["met"]) == (3.0, True)
    floor = by_name["batch time within 1.25x of the Ironic floor (10,000 enrolled, boot 0 s)"]
    assert floor["value"] == round(12 / 13, 3)
    assert "batch time within 1.25x of the Ironic floor (10,000 enrolled, boot 1 s)" in by_name
    # No peer in the 1 s run: no peer row for it.
    assert "at least 2x faster than ironic-inspector (10,000 enrolled, boot 1 s)" not in by_name
    # Smaller site first, and at each site the boot delays in order.
    names = [t["name"] for t in found if "floor" in t["name"]]
    assert [n.split("(")[1] for n in names] == [
        "1,000 enrolled, boot 0 s)",
        "10,000 enrolled, boot 0 s)",
        "10,000 enrolled, boot 1 s)",
    ]
    calls = by_name["no more Ironic calls per introspection than the minimal sequence"]
    assert calls["met"]


def test_sweeps_of_a_large_batch_are_spaced_by_the_statuses_they_list():
    assert batch.sweep_pause(0) == batch.SWEEP_INTERVAL
    assert batch.sweep_pause(40) == batch.SWEEP_INTERVAL
    # 1,000 statuses at SWEEP_RATE a second: the listing is not the batch's main load.
    assert batch.sweep_pause(1000) == 1000 / batch.SWEEP_RATE
    assert batch.sweep_pause(1000) > batch.sweep_pause(200)


def test_a_cluster_host_killed_keeps_two_thirds_of_the_throughput() -> None:
    def cluster(name: str, **fields: object) -> dict:
        return _scenario(name, "inspector", workers=3, hosts=3, batch=200, **fields)

    def judged(killed: dict) -> dict:
        scenarios = [cluster("cluster-200", throughput=6.0, finished=200), killed]
        found = targets.evaluate({"scenarios": scenarios})
        return next(t for t in found if t["name"].startswith("a host of the local cluster"))

    slower = cluster("cluster-kill-200", killed_worker=True, throughput=4.2, finished=200)
    target = judged(slower)
    assert (target["value"], target["limit"], target["met"]) == (0.7, 0.667, True)
    assert "1 of 3 lost half-way: at least 0.667x" in target["detail"]
    too_slow = dict(slower, throughput=3.6)
    assert not judged(too_slow)["met"]
    lost = dict(slower, finished=199)
    assert not judged(lost)["met"]


def test_cluster_runs_are_labelled_as_the_cluster() -> None:
    killed = _scenario("cluster-kill-200", "inspector", workers=3, hosts=3, killed_worker=True)
    assert (
        tables.target_label(killed) == "ours (inspector), local cluster of 3 hosts, worker killed"
    )
    assert tables.target_label(_scenario("batch-200", "inspector", workers=2)) == (
        "ours (inspector), 2 workers"
    )
