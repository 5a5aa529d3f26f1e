"""The fleet benchmark's report: Markdown tables and PNG plots from its results JSON.

Owns the section of docs/performance.md between its markers and the docs/images/fleet-*
plots; it only reads the results (any optional field or scenario may be missing) and
measures nothing. Plots use matplotlib's object API on the Agg canvas (no pyplot state).
"""

import os
import pathlib
from collections.abc import Callable, Iterable
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

BEGIN, END = "<!-- bench/fleet begin -->", "<!-- bench/fleet end -->"
#: How each target is shown, in the order tables list them.
LABELS = {
    "inspector": "ours (inspector)",
    "ironic-inspector": "ironic-inspector 12.5.0",
    "ironic-floor": "Ironic floor",
    "engine": "engine (fake Ironic)",
}
COLORS = {"inspector": "tab:blue", "ironic-inspector": "tab:orange", "ironic-floor": "tab:gray"}
SERVICES = ("inspector", "ironic-inspector")
DASH = "-"


#: A table column: its header and how a scenario shows in it.
Column = tuple[str, Callable[[dict], str]]


def _num(value: object, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return DASH
    return f"{value:,}" if isinstance(value, int) else f"{value:,.{digits}f}"


def _get(scenario: dict, *keys: str) -> object:
    value: object = scenario
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _col(header: str, *keys: str, digits: int = 1) -> Column:
    """A column showing the number at scenario[keys[0]][keys[1]]..., or a dash."""
    return header, lambda s: _num(_get(s, *keys), digits)


def _table(columns: list[Column], scenarios: Iterable[dict]) -> list[str]:
    rows = [[show(s) for _, show in columns] for s in scenarios]
    lines = ["| " + " | ".join(header for header, _ in columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _label(scenario: dict) -> str:
    target = scenario.get("target", "?")
    label = LABELS.get(target, target)
    if target == "inspector" and scenario.get("workers"):
        label += f", {scenario['workers']} worker{'s' if scenario['workers'] > 1 else ''}"
    return label + (", worker killed" if scenario.get("killed_worker") else "")


NAME: Column = ("scenario", lambda s: s.get("name", DASH))
TARGET: Column = ("target", _label)


def _key(scenario: dict) -> tuple:
    return (scenario.get("enrolled"), scenario.get("batch"), scenario.get("concurrency"))


def _order(scenario: dict) -> tuple:
    target = list(LABELS).index(scenario["target"]) if scenario.get("target") in LABELS else 9
    return (target, scenario.get("workers") or 0, bool(scenario.get("killed_worker")))


def _by_size(scenario: dict) -> tuple:
    """Smaller runs first, then by target; a missing size sorts first."""
    return (*(value or 0 for value in _key(scenario)), *_order(scenario))


def _of(results: dict, *targets: str) -> list[dict]:
    """The scenarios of these targets, smaller runs first."""
    scenarios = results.get("scenarios") or []
    return sorted((s for s in scenarios if s.get("target") in targets), key=_by_size)


def floor_groups(results: dict) -> list[tuple[dict, list[dict]]]:
    """(the floor, itself and the services' scenarios of its size) for each floor run."""
    groups = []
    for floor in _of(results, "ironic-floor"):
        group = [floor] + [
            s
            for s in _of(results, *SERVICES)
            if _key(s) == _key(floor) and not s.get("killed_worker")
        ]
        groups.append((floor, sorted(group, key=_order)))
    return groups


def _floor_section(results: dict) -> list[str]:
    lines = []
    for floor, group in floor_groups(results):
        enrolled, batch, concurrency = _key(floor)

        def ratio(s: dict, floor: dict = floor) -> str:
            seconds, floor_seconds = s.get("batch_seconds"), floor.get("batch_seconds")
            return _num(seconds / floor_seconds if seconds and floor_seconds else None, 2)

        columns = [TARGET, _col("batch s", "batch_seconds"), ("x floor", ratio)]
        columns += [_col("introspections/s", "throughput", digits=2)]
        columns += [_col(f"continue {q} ms", "continue_ms", q) for q in ("p50", "p99")]
        columns += [_col("Ironic calls each", "ironic_calls_per_introspection")]
        columns += [_col("CPU ms each", "cpu_ms_per_introspection")]
        lines += ["", f"### Side by side: {batch} introspections at concurrency {concurrency}"]
        lines += ["", f"On {_num(enrolled)} enrolled nodes; x floor is the batch time over the"]
        lines += ["Ironic floor's (the Ironic calls of a minimal introspection alone).", ""]
        lines += _table(columns, group)
    return lines


def _batch_section(results: dict) -> list[str]:
    def spread(s: dict) -> str:
        return " / ".join(_num(_get(s, "introspection_seconds", q)) for q in ("p50", "p95", "max"))

    columns = [NAME, TARGET, *(_col(f, f) for f in ("enrolled", "batch", "concurrency"))]
    columns += [_col(f, f) for f in ("finished", "errors", "unfinished")]
    columns += [_col("batch s", "batch_seconds"), _col("introspections/s", "throughput", digits=2)]
    columns += [("introspection p50 / p95 / max s", spread)]
    columns += [_col("continue p99 ms", "continue_ms", "p99")]
    scenarios = _of(results, *SERVICES)
    return ["", "### Batches", "", *_table(columns, scenarios)] if scenarios else []


def _engine_section(results: dict) -> list[str]:
    def ratio(s: dict) -> str:
        ceiling, rate = s.get("ceiling_per_second"), s.get("throughput")
        return _num(ceiling / rate if ceiling and rate else None, 2)

    columns = [NAME, _col("workers", "workers"), _col("worker threads", "worker_threads")]
    columns += [_col("introspections/s", "throughput"), _col("ceiling /s", "ceiling_per_second")]
    columns += [("ceiling / measured", ratio), _col("CPU ms each", "cpu_ms_per_introspection")]
    scenarios = sorted(_of(results, "engine"), key=_order)
    if not scenarios:
        return []
    intro = "Against the in-repo fake Ironic: the engine's rate beside the sum-of-parts ceiling."
    return ["", "### Engine alone", "", intro, "", *_table(columns, scenarios)]


def _time_section(results: dict) -> list[str]:
    def ironic(s: dict) -> str:
        seconds = _get(s, "backend_seconds_per_introspection", "ironic")
        return _num(
            seconds if seconds is not None else s.get("ironic_seconds_per_introspection"), 3
        )

    columns = [NAME, TARGET, _col("introspection p50 s", "introspection_seconds", "p50", digits=2)]
    columns += [("ironic s", ironic)]
    columns += [
        _col(f"{b} s", "backend_seconds_per_introspection", b, digits=3)
        for b in ("database", "dlm", "queue")
    ]
    columns += [_col("CPU ms", "cpu_ms_per_introspection")]
    columns += [_col("Ironic calls", "ironic_calls_per_introspection")]
    columns += [_col("list-all calls", "ironic_list_all_calls")]
    scenarios = _of(results, *SERVICES)
    if not scenarios:
        return []
    lines = ["", "### Where the time goes, per introspection", "", *_table(columns, scenarios)]
    return lines + _calls_by_kind(results)


def _calls_by_kind(results: dict) -> list[str]:
    """Ironic calls per introspection by kind, a column per scenario of the first floor
    comparison (all scenarios that report them when there is none)."""
    groups = floor_groups(results)
    candidates = groups[0][1] if groups else results.get("scenarios") or []
    reporting = [s for s in candidates if s.get("ironic_calls_by_kind")]
    if not reporting:
        return []
    kinds = sorted({kind for s in reporting for kind in s["ironic_calls_by_kind"]})
    columns: list[Column] = [("Ironic call", lambda kind: kind)]
    columns += [
        (
            f"{s.get('name', DASH)}: {_label(s)}",
            lambda k, s=s: _num(_get(s, "ironic_calls_by_kind", k), 2),
        )
        for s in reporting
    ]
    return ["", "Ironic API calls per introspection, by kind:", "", *_table(columns, kinds)]


def _targets_section(results: dict) -> list[str]:
    def met(target: dict) -> str:
        return {True: "met", False: "**not met**"}.get(target.get("met"), DASH)

    columns: list[Column] = [("target", lambda t: t.get("name", DASH))]
    columns += [_col("value", "value", digits=2), _col("limit", "limit", digits=2)]
    columns += [("met", met), ("detail", lambda t: t.get("detail") or "")]
    targets = results.get("targets") or []
    return ["", "### Targets", "", *_table(columns, targets)] if targets else []


def markdown(results: dict, images: str = "images") -> str:
    """The section put in docs/performance.md; plots linked under `images` (relative)."""
    machine = results.get("machine") or {}
    facts = [
        f"{machine['cpus']} CPUs" if machine.get("cpus") else None,
        f"Python {machine['python']}" if machine.get("python") else None,
        f"Ironic {machine['ironic']}" if machine.get("ironic") else None,
        f"peer {machine['peer']}" if machine.get("peer") else None,
        f"run {machine['when']}" if machine.get("when") else None,
    ]
    lines = ["## Fleet (`bench/fleet`)", ""]
    lines.append("Machine: " + ", ".join(f for f in facts if f) + "; every service on it.")
    if results.get("command"):
        lines += ["", "```", results["command"], "```"]
    for section in (_floor_section, _batch_section, _engine_section, _time_section):
        lines += section(results)
    lines += _targets_section(results)
    figures = [(name, title) for name, title, _ in _plotters(results)]
    if figures:
        for name, title in figures:
            lines += ["", f"![{title}]({images}/{name})"]
    return "\n".join(lines) + "\n"


def update_doc(results: dict, doc: pathlib.Path, images: pathlib.Path) -> None:
    """Write the plots under `images` and the section into `doc` between its markers
    (appended with them at the end when absent); the rest of `doc` is left as it was."""
    plots(results, images)
    link = pathlib.Path(os.path.relpath(images, doc.parent)).as_posix()
    block = f"{BEGIN}\n{markdown(results, images=link)}{END}"
    text = doc.read_text() if doc.exists() else "# Performance\n"
    if BEGIN in text and END in text.split(BEGIN, 1)[1]:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)


# Plots --------------------------------------------------------------------------------

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
            series.setdefault(_key(s), []).append((s["workers"], s["throughput"]))
    return {key: sorted(points) for key, points in sorted(series.items(), key=str)}


def _throughput(figure: Figure, results: dict) -> None:
    scenarios = results.get("scenarios") or []
    panels = [
        (draw, title)
        for draw, title, has in (
            (_on_ironic, "On the real Ironic", _rates(_services(results), "inspector")),
            (_engine_alone, "Engine alone, fake Ironic", _rates(scenarios, "engine")),
        )
        if has
    ]
    for index, (draw, title) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, len(panels), index)
        workers = draw(axes, results)
        axes.set(title=title, xlabel="worker processes", ylabel="introspections per second")
        axes.set_xticks(workers)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        _legend(axes)


def _on_ironic(axes: Any, results: dict) -> list[int]:
    """Ours against worker processes, the peer and the floor as reference lines."""
    series = _rates(_services(results), "inspector")
    blues = matplotlib.colormaps["Blues"]
    for number, ((enrolled, batch, _), points) in enumerate(series.items()):
        color = blues(0.5 + 0.4 * number / max(len(series) - 1, 1))
        label = f"ours, batch {batch} of {enrolled}"
        axes.plot(*zip(*points, strict=True), marker="o", color=color, label=label)
    for s in results.get("scenarios") or []:
        style = {"ironic-inspector": "--", "ironic-floor": ":"}.get(s.get("target", ""))
        if style and s.get("throughput") and not s.get("killed_worker"):
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
    scenarios = sorted(_services(results), key=lambda s: (_order(s), _by_size(s)))
    for index, (field, title, unit) in enumerate(panels, start=1):
        axes = figure.add_subplot(1, 2, index)
        for s, color in zip(scenarios, _colors(scenarios), strict=True):
            samples = sorted(v for v in (s.get("histograms") or {}).get(field) or [] if v > 0)
            if not samples:
                continue
            fractions = [(i + 1) / len(samples) for i in range(len(samples))]
            style = "-" if s["target"] == "inspector" else "--"
            label = f"{s.get('name', '?')}: {_label(s)}"
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
            bar.set_label(_label(s))
            axes.bar_label(bar, fmt="%.1f", fontsize="small")
    names = [f"{g[0].get('batch')} nodes, concurrency {g[0].get('concurrency')}" for g in groups]
    axes.set_xticks(range(len(groups)), names)
    axes.set(title="Batch time: ours, ironic-inspector, Ironic floor", ylabel="seconds")
    axes.grid(axis="y", alpha=0.3)
    _legend(axes)


def _plotters(results: dict) -> list[tuple[str, str, Plotter]]:
    """(file name, title, drawer) of each plot the results have data for."""
    scenarios = results.get("scenarios") or []
    found = []
    if _rates(_services(results), "inspector") or _rates(scenarios, "engine"):
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
    for name, _, draw in _plotters(results):
        wide = name != "fleet-batch.png"
        figure = Figure(figsize=(12 if wide else 8, 5), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure, results)
        path = images / name
        # No "Software" entry: the file changes only when the figures do.
        figure.savefig(path, format="png", metadata={"Software": None})
        written.append(path)
    return written
