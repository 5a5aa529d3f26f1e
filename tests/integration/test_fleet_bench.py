"""bench/fleet, small: a smoke test of the benchmark itself, not a timing assertion.

20 nodes enrolled in a private Ironic 39 the benchmark starts, introspected by the
Ironic floor, by our service and by ironic-inspector 12.5.0 (the `compare` scenario),
and by the local cluster of three hosts (the `cluster` scenario); the results file, the
Markdown section and the plots are written into tmp_path. What
is checked is that every introspection finished, that the Ironic calls were counted
and attributed, and that the report was made; the figures themselves are not judged.
"""

import json
import os
import subprocess
import sys

import pytest

from bench.fleet import peer
from tests.conftest import service_unavailable
from tests.e2e.conftest import require_cluster_prerequisites
from tests.integration.cluster import ROOT, free_port

pytestmark = pytest.mark.integration

NODES = 20
#: Seconds the whole small run may take (Ironic start, enrolment, three batches).
TIMEOUT = 900


@pytest.fixture
def services_env(postgresql_admin, redis_server, rabbitmq_server) -> dict[str, str]:
    return dict(os.environ)


@pytest.fixture
def peer_env(services_env) -> dict[str, str]:
    if subprocess.run([peer.SCRIPT, "installed"], check=False).returncode != 0:
        service_unavailable("ironic-inspector 12.5.0 is not installed: scripts/ironic-inspector")
    return services_env


def _bench(tmp_path, env: dict[str, str], *args: str) -> dict:
    """`python -m bench.fleet ARGS` on a private Ironic under tmp_path; its results."""
    out = tmp_path / "fleet.json"
    own = ("--ironic-dir", str(tmp_path / "ironic"), "--ironic-port", str(free_port()))
    run = subprocess.run(
        [sys.executable, "-m", "bench.fleet", *args, *own, "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return json.loads(out.read_text())


def test_small_fleet_runs_both_services_and_the_floor(tmp_path, peer_env):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nkept\n")
    results = _bench(
        tmp_path,
        peer_env,
        *("--scenarios", "compare", "--site", str(NODES), "--batch", str(NODES)),
        *("--concurrency", "4", "--compare-boot-delays", "1"),
        *("--doc", str(doc), "--images", str(tmp_path / "images")),
    )
    by_target = {entry["target"]: entry for entry in results["scenarios"]}
    assert set(by_target) == {"ironic-floor", "inspector", "ironic-inspector"}
    for target, entry in by_target.items():
        # Every introspection ended; ours and the floor without an error. (ironic-inspector
        # may fail a node whose PATCH meets Ironic's lock: it does not retry it.)
        assert entry["unfinished"] == 0, target
        assert entry["finished"] + entry["errors"] == NODES, target
        if target != "ironic-inspector":
            assert entry["finished"] == NODES, (target, entry.get("error_samples"))
        assert entry["batch_seconds"] > 0, target
        # Every introspection's calls went through the proxy and were attributed.
        assert entry["ironic_calls_per_introspection"] >= (1 if entry["errors"] else 6), target
        assert entry["ironic_calls_by_kind"]["PUT node/states/power"] >= 2, target
    for target in ("inspector", "ironic-inspector"):
        entry = by_target[target]
        # Each simulated ramdisk posted once, and each post was answered 200.
        assert entry["continue_ms"]["count"] >= NODES, target
        assert entry["continue_non_2xx"] == 0, target
        assert entry["cpu_ms_per_introspection"] > 0, target
        # The whole machine spent at least what the service under test did.
        assert entry["machine_cpu_ms_per_introspection"] >= entry["cpu_ms_per_introspection"]
        assert 0 < entry["machine_busy"] <= 1, target
    # Where the time went: our workers' metrics were read.
    assert by_target["inspector"]["backend_seconds_per_introspection"]["database"] > 0

    names = {target["name"] for target in results["targets"]}
    run = f"({NODES:,} enrolled, boot 1 s)"
    assert f"batch time within 1.25x of the Ironic floor {run}" in names
    assert f"at least 2x faster than ironic-inspector {run}" in names

    text = doc.read_text()
    assert "kept" in text
    assert "<!-- bench/fleet begin -->" in text and "<!-- bench/fleet end -->" in text
    images = list((tmp_path / "images").glob("fleet-*.png"))
    assert images and all(image.stat().st_size > 1000 for image in images)


def test_small_fleet_on_the_local_cluster(tmp_path, services_env):
    """The `cluster` scenario: a batch on scripts/cluster's three hosts, then the same
    with the first host's worker killed half-way; every node finishes both times."""
    require_cluster_prerequisites()
    results = _bench(
        tmp_path,
        services_env,
        *("--scenarios", "cluster", "--site", str(NODES), "--batches", str(NODES)),
        *("--no-peer", "--no-doc"),
    )
    by_name = {entry["name"]: entry for entry in results["scenarios"]}
    assert set(by_name) == {f"cluster-{NODES}", f"cluster-kill-{NODES}"}
    for name, entry in by_name.items():
        # The killed worker's requests go to the others: a node it was processing is
        # processed again, and one it had processed gets the `finish` it never applied.
        # Any error, or a node left behind, fails.
        assert not entry["errors"] and not entry["unfinished"], (
            name,
            entry.get("error_samples"),
        )
        assert entry["finished"] == NODES, name
        assert entry["hosts"] == 3 and entry["workers"] == 3, name
        assert entry["ironic_calls_per_introspection"] >= 6, name
        # The CPU of the three APIs and the three workers was counted.
        assert entry["cpu_ms_per_introspection"] > 0, name
    assert by_name[f"cluster-kill-{NODES}"]["killed_at_seconds"] is not None
    assert by_name[f"cluster-{NODES}"]["killed_at_seconds"] is None
    names = {target["name"] for target in results["targets"]}
    assert any(name.startswith("a host of the local cluster killed") for name in names)
