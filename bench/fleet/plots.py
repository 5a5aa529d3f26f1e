"""The fleet benchmark's plots: throughput against worker processes, latency
distributions, batch time against the Ironic floor; PNG files from the results JSON.

matplotlib's object API on the Agg canvas (no pyplot state); reads the results only.
"""

import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bench.fleet.tables import (
    COLORS,
    LABELS,
    SERVICES,
    by_size,
    floor_groups,
    size_key,
    target_label,
    target_order,
)

Plotter = Callable[[Figure, dict], None]
#: Ours in blues, the peer in oranges, the floor in grey: the same in every plot.
SHADES = {"inspector": "Blues", "ironic-inspector": "Oranges", "ironic-floor": "Greys"}


def _services(results: dict, *, killed: bool = False) -> list[dict]:
    return [
        s
        for s in results.get("scenarios") or []
        if s.get("target") in SERVICES and bool(s.get("killed_worker")) == killed
    ]


def _colors(scenarios: list[dict]) -> list[tuple]:
    """A colour per scenario: its target's hue, a darker shade for each next one."""
    counts: dict[str, int] = {}
    for s in scenarios:
        counts[s.get("target", "")] = counts.get(s.get("target", ""), 0) + 1
    seen: dict[str, int] = {}
    colors = []
    for s in scenarios:
        target = s.get("target", "")
        index = seen[target] = seen.get(target, -1) + 1
        shade = 0.6 if counts[target] == 1 else 0.45 + 0.45 * index / (counts[target] - 1)
        colors.append(matplotlib.colormaps[SHADES.get(target, "Greens")](shade))
    return colors


def _rates(scenarios: Iterable[dict], target: str) -> dict[tuple, list[tuple[int, float]]]:
    """(workers, introspections/s) points of `target`, one series per batch size."""
    series: dict[tuple, list[tuple[int, float]]] = {}
    for s in scenarios:
        if s.get("target") == target and s.get("workers") and s.get("throughput"):
            series.setdefault(size_key(s), []).append((s["workers"], s["throughput"]))
    return {key: sorted(points) for key, points in sorted(series.items(), key=str)}


def _throughput(figure: Figure, results: dict) -> None:
    scenarios = results.get("scenarios") or []
    panels = [
        (draw, title)
        for draw, title, has in (
            (
                _on_ironic,
                "On the real Ironic, batches started at once",
                _rates(_batches_at_once(results), "inspector"),
            ),
            (_engine_alone, "Engine alone, fake Ironic", _rates(scenarios, "engine")),
        )
        if has
    ]
    for index, (draw, title) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, len(panels), index)
        workers = draw(axes, results)
        axes.set(title=title, xlabel="worker processes", ylabel="introspections per second")
        hosts = _cluster_sizes(results) if draw is _on_ironic else set()
        axes.set_xticks(
            workers, [f"{w}\n(local cluster)" if w in hosts else str(w) for w in workers]
        )
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        _legend(axes)


def _at_once(scenario: dict) -> bool:
    """A batch started all at once (not `single`, not `compare`'s few at a time); one
    whose size is not recorded counts as one."""
    batch = scenario.get("batch")
    return batch is None or (batch > 1 and scenario.get("concurrency", batch) == batch)


def _batches_at_once(results: dict) -> list[dict]:
    return [s for s in _services(results) if _at_once(s)]


def _cluster_sizes(results: dict) -> set[int]:
    """The worker counts that are the local cluster's hosts."""
    return {s["workers"] for s in _services(results) if s.get("hosts") and s.get("workers")}


def _on_ironic(axes: Any, results: dict) -> list[int]:
    """Ours against worker processes (batches started at once; the local cluster's
    hosts as its workers), the peer's same batches as reference lines."""
    series = _rates(_batches_at_once(results), "inspector")
    blues = matplotlib.colormaps["Blues"]
    for number, ((enrolled, batch, *_), points) in enumerate(series.items()):
        color = blues(0.5 + 0.4 * number / max(len(series) - 1, 1))
        label = f"ours, batch {batch} of {enrolled}"
        axes.plot(*zip(*points, strict=True), marker="o", color=color, label=label)
    for s in results.get("scenarios") or []:
        style = {"ironic-inspector": "--", "ironic-floor": ":"}.get(s.get("target", ""))
        if style and s.get("throughput") and not s.get("killed_worker") and _at_once(s):
            label = f"{LABELS[s['target']]}, batch {s.get('batch')} of {s.get('enrolled')}"
            axes.axhline(s["throughput"], linestyle=style, color=COLORS[s["target"]], label=label)
    return sorted({w for points in series.values() for w, _ in points})


def _engine_alone(axes: Any, results: dict) -> list[int]:
    """The engine's rate against worker processes, beside the sum-of-parts ceiling."""
    engine = [s for s in results.get("scenarios") or [] if s.get("target") == "engine"]
    measured = sorted(
        (s["workers"], s["throughput"]) for s in engine if s.get("workers") and s.get("throughput")
    )
    axes.plot(*zip(*measured, strict=True), marker="o", color="tab:blue", label="engine")
    ceiling = sorted(
        (s["workers"], s["ceiling_per_second"])
        for s in engine
        if s.get("workers") and s.get("ceiling_per_second")
    )
    if ceiling:
        axes.plot(
            *zip(*ceiling, strict=True),
            marker="_",
            markersize=16,
            linestyle="--",
            color="tab:gray",
            label="sum-of-parts ceiling",
        )
    return [w for w, _ in measured]


def _legend(axes: Any) -> None:
    """A legend with each label once."""
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    axes.legend(unique.values(), unique.keys(), fontsize="small")


def _latency(figure: Figure, results: dict) -> None:
    panels = [
        ("continue_ms", "POST /v1/continue", "milliseconds (log scale)"),
        ("introspection_seconds", "Introspection, start to finished", "seconds (log scale)"),
    ]
    scenarios = sorted(_services(results), key=lambda s: (target_order(s), by_size(s)))
    for index, (field, title, unit) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, 2, index)
        for s, color in zip(scenarios, _colors(scenarios), strict=True):
            samples = sorted(v for v in (s.get("histograms") or {}).get(field) or [] if v > 0)
            if not samples:
                continue
            fractions = [(i + 1) / len(samples) for i in range(len(samples))]
            style = "-" if s["target"] == "inspector" else "--"
            label = f"{s.get('name', '?')}: {target_label(s)}"
            axes.step(samples, fractions, where="post", linestyle=style, color=color, label=label)
        axes.set(title=title, xlabel=unit, ylabel="fraction at most x (CDF)")
        axes.set_xscale("log")
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3, which="both")
        if axes.lines:
            axes.legend(fontsize="x-small")


def _batch(figure: Figure, results: dict) -> None:
    axes = figure.add_subplot()
    groups = [group for _, group in floor_groups(results)]
    width = 0.8 / max(len(group) for group in groups)
    for index, group in enumerate(groups):
        for offset, (s, color) in enumerate(zip(group, _colors(group), strict=True)):
            x = index + (offset - (len(group) - 1) / 2) * width
            bar = axes.bar(x, s.get("batch_seconds") or 0.0, width * 0.9, color=color)
            bar.set_label(target_label(s))
            axes.bar_label(bar, fmt="%.1f", fontsize="small")
    names = [
        f"{g[0].get('enrolled') or 0:,} enrolled\nboot {g[0].get('boot_delay') or 0:g} s"
        for g in groups
    ]
    axes.set_xticks(range(len(groups)), names)
    sizes = sorted({(g[0].get("batch"), g[0].get("concurrency")) for g in groups}, key=str)
    batches = "; ".join(f"{batch} introspections at concurrency {c}" for batch, c in sizes)
    axes.set(title=f"Batch time: ours, ironic-inspector, Ironic floor\n{batches}")
    axes.set(ylabel="seconds")
    axes.set_ylim(top=axes.get_ylim()[1] * 1.25)  # room for the legend above the bars
    axes.grid(axis="y", alpha=0.3)
    _legend(axes)


def plotters(results: dict) -> list[tuple[str, str, Plotter]]:
    """(file name, title, drawer) of each plot the results have data for."""
    scenarios = results.get("scenarios") or []
    found = []
    if _rates(_batches_at_once(results), "inspector") or _rates(scenarios, "engine"):
        found.append(("fleet-throughput.png", "Throughput against worker processes", _throughput))
    fields = ("continue_ms", "introspection_seconds")
    if any((s.get("histograms") or {}).get(f) for s in _services(results) for f in fields):
        found.append(("fleet-latency.png", "Latency distributions", _latency))
    if floor_groups(results):
        found.append(("fleet-batch.png", "Batch time against the Ironic floor", _batch))
    return found


def plots(results: dict, images: pathlib.Path) -> list[pathlib.Path]:
    """The PNG files written under `images`, one per plot the results have data for."""
    images.mkdir(parents=True, exist_ok=True)
    written = []
    for name, _, draw in plotters(results):
        wide = name != "fleet-batch.png"
        figure = Figure(figsize=(12 if wide else 8, 5), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure, results)
        path = images / name
        # No "Software" entry: the file changes only when the figures do.
        figure.savefig(path, format="png", metadata={"Software": None})
        written.append(path)
    return written
