"""bench/plots.py: each single-file benchmark's plot and section drawn again from its
saved results (`--plot-only`), measuring nothing and leaving the rest of the page."""

import argparse
import json
import pathlib
import shutil

import pytest

from bench import api, failover, history, plots, recovery, startup, worker

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHES = [
    (api, plots.api, "api"),
    (worker, plots.worker, "worker"),
    (failover, plots.failover, "failover"),
    (startup, plots.startup, "startup"),
    (recovery, plots.recovery, "recovery"),
    (history, history.draw, "history"),
]


def never(_args):
    raise AssertionError("--plot-only measured")


@pytest.mark.parametrize(("module", "draw", "name"), BENCHES, ids=[b[2] for b in BENCHES])
def test_plot_only_redraws_from_the_results_and_replaces_only_its_section(
    module, draw, name, tmp_path
):
    results = tmp_path / f"{name}.json"
    shutil.copy(ROOT / "bench" / "results" / f"{name}.json", results)
    doc = tmp_path / "docs" / "performance.md"
    doc.parent.mkdir()
    marker = f"bench/{name}.py"
    old = f"<!-- {marker} begin -->\nOLD-SECTION\n<!-- {marker} end -->"
    doc.write_text(f"# P\n\nbefore\n{old}\nafter\n")
    args = argparse.Namespace(out=str(results), plot_only=True, no_doc=False)

    plots.publish(args, never, module.markdown, draw, marker, f"{name}.png", "T", tmp_path)

    text = doc.read_text()
    assert "OLD-SECTION" not in text and "before" in text and "after" in text
    heading, blank, image = text.split(f"<!-- {marker} begin -->\n")[1].splitlines()[:3]
    assert heading.startswith("## ") and blank == "" and image == f"![T](images/{name}.png)"
    png = tmp_path / "docs" / "images" / f"{name}.png"
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 1000
    assert json.loads(results.read_text()) == json.loads(
        (ROOT / "bench" / "results" / f"{name}.json").read_text()
    )


def test_no_doc_writes_the_results_and_touches_no_doc(tmp_path):
    args = argparse.Namespace(out=str(tmp_path / "r.json"), plot_only=False, no_doc=True)
    saved = json.loads((ROOT / "bench" / "results" / "failover.json").read_text())

    plots.publish(
        args, lambda _a: saved, failover.markdown, plots.failover, "x", "x.png", "T", tmp_path
    )

    assert json.loads((tmp_path / "r.json").read_text()) == saved
    assert not (tmp_path / "docs").exists()
