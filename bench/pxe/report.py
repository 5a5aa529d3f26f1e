"""The PXE filter benchmark's report: ratios and targets from the results, the section
of docs/performance.md between its markers, and the plot docs/images/pxe-filter.png.

Only reads the results; measures nothing.
"""

import os
import pathlib
import re

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

BEGIN, END = "<!-- bench/pxe_filter begin -->", "<!-- bench/pxe_filter end -->"
OURS, THEIRS = "inspector pxe-filter", "ironic-pxe-filter"
#: Targets: ours allows a MAC within this many seconds (notifications); a reconcile at
#: 10,000 nodes (the nodes' alone, and a full one) within this wall time, a full one in
#: this many Ironic calls.
ALLOW_TARGET = 1.0
RECONCILE_WALL_TARGET = 2.0
RECONCILE_CALLS_TARGET = 15
COLORS = {OURS: "tab:blue", THEIRS: "tab:orange"}


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def ratios(results: dict) -> dict:
    """theirs / ours for each latency figure and run, and ours / theirs for the costs."""
    found: dict = {}
    for run in results.get("latency") or []:
        figures = run["filters"]
        if OURS in figures and THEIRS in figures:
            for want in ("allow", "deny"):
                for stat in ("median", "max"):
                    found[f"{run['name']} {want} {stat}: theirs / ours"] = _ratio(
                        figures[THEIRS][want][stat], figures[OURS][want][stat]
                    )
    for size in results.get("reconcile") or []:
        if OURS in size and THEIRS in size:
            for key in ("cpu_per_reconcile", "ironic_cpu_per_reconcile"):
                found[f"{size['nodes']} nodes {key}: ours / theirs"] = _ratio(
                    size[OURS][key], size[THEIRS][key]
                )
            full = size[OURS].get("full_wall") or size[OURS]["wall"]
            found[f"{size['nodes']} nodes full reconcile wall: ours / theirs"] = _ratio(
                full["median"], size[THEIRS]["wall"]["median"]
            )
    return found


def targets(results: dict) -> list[dict]:
    checks = []
    for run in results.get("latency") or []:
        ours = run["filters"].get(OURS)
        if ours and run.get("notifications"):
            worst = ours["allow"]["max"]
            checks.append(
                {
                    "target": f"{run['name']}: ours allows within {ALLOW_TARGET:g} s (max)",
                    "value": worst,
                    "met": worst is not None
                    and worst <= ALLOW_TARGET
                    and not ours["allow"]["missed"],
                }
            )
    for size in results.get("reconcile") or []:
        ours = size.get(OURS)
        if ours and size["nodes"] >= 10000:
            nodes = f"{size['nodes']:,} nodes"
            for what, wall in (
                ("the reconcile of the nodes under inspection", ours["wall"]["max"]),
                ("a full reconcile (with every port)", (ours.get("full_wall") or {}).get("max")),
            ):
                checks.append(
                    {
                        "target": f"{what} at {nodes} under {RECONCILE_WALL_TARGET:g} s wall (max)",
                        "value": wall,
                        "met": wall is not None and wall < RECONCILE_WALL_TARGET,
                    }
                )
            calls = ours["requests_per_reconcile"]
            checks.append(
                {
                    "target": f"a full reconcile at {nodes}: at most "
                    f"{RECONCILE_CALLS_TARGET} calls (paginated listings)",
                    "value": calls,
                    "met": calls <= RECONCILE_CALLS_TARGET,
                }
            )
    return checks


def markdown(results: dict, image: str) -> str:
    machine = results.get("machine") or {}
    lines = ["## PXE filter for Ironic's own inspection (`bench/pxe_filter.py`)", ""]
    lines.append(
        f"Run {machine.get('when', '?')} on {machine.get('cpus', '?')} CPUs shared with other "
        f"engineers' tests (load average {machine.get('load_before', '?')} before, "
        f"{machine.get('load_after', '?')} after); Ironic {machine.get('ironic', '?')}. "
        "Compare figures within this run."
    )
    lines += ["", f"![PXE filter latency and reconcile cost]({image})"]
    if results.get("command"):
        lines += ["", "```", results["command"], "```"]
    if results.get("also"):
        lines += ["", results["also"]]
    if results.get("left_undone"):
        lines += ["", f"**Not measured in this run**: {results['left_undone']}"]
    lines += ["", f"### Latency over {results.get('latency_nodes', '?')} nodes (seconds)", ""]
    lines.append(
        "From the request (`inspect`; the ramdisk's `continue_inspection`) to the MAC's "
        "record in the filter's hostsdir, and from Ironic's own record of the change "
        "(the node's `inspection_started_at`; its `provision_updated_at` once "
        "`manageable`) to that record: the second is the filter's share."
    )
    lines += [
        "",
        "| run | filter | period s | notifications | allowed median / max "
        "| denied median / max | after Ironic: allowed median / max "
        "| after Ironic: denied median / max | missed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in results.get("latency") or []:
        for name, figures in run["filters"].items():
            cells = [
                f"{_fmt(figures[key]['median'])} / {_fmt(figures[key]['max'])}"
                for key in ("allow", "deny", "allow_after_ironic", "deny_after_ironic")
                if key in figures
            ]
            lines.append(
                f"| {run['name']} | {name} | {_fmt(figures['period'], 0)} | "
                f"{'yes' if figures.get('notifications') else 'no'} | "
                + " | ".join(cells)
                + f" | {figures['allow']['missed'] + figures['deny']['missed']} |"
            )
    for run in results.get("latency") or []:
        own = run.get("ironic")
        if own:
            lines.append(
                f"\nIronic itself ({run['name']}): `inspect` to `inspecting` "
                f"{_fmt(own['allow']['median'])} s median, {_fmt(own['allow']['max'])} max; "
                f"`continue_inspection` to `manageable` {_fmt(own['deny']['median'])} s "
                f"median, {_fmt(own['deny']['max'])} max."
            )
    lines += ["", "### One full reconcile", ""]
    lines.append(
        "Ours lists the nodes under inspection (the reconcile: the leader's every period, "
        "a new leader's before it opens) and every port (the blacklist's listing, on a "
        "thread of its own), each every period; ironic-pxe-filter reads both from Ironic's "
        "database in one sync. CPU and requests are per full reconcile (a port listing "
        "and the nodes' reconciles beside it); its wall time is the two listings' one "
        "after the other."
    )
    lines += [
        "",
        "| nodes | filter | listing | period s | wall median s | wall max s | filter CPU s "
        "| Ironic CPU s | requests to Ironic |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for size in results.get("reconcile") or []:
        for name in (OURS, THEIRS):
            r = size.get(name)
            if not r:
                continue
            head = f"| {size['nodes']:,} | {name} "
            cost = (
                f"| {_fmt(r['cpu_per_reconcile'], 3)} | {_fmt(r['ironic_cpu_per_reconcile'], 3)} "
                f"| {_fmt(r['requests_per_reconcile'], 0)} {r['requests_kind']} |"
            )
            rows = [("full sync", r["wall"], cost)]
            if "ports" in r:
                calls = "| | | {} |"
                rows = [
                    (
                        "nodes under inspection",
                        r["wall"],
                        calls.format(_fmt(r["reconcile_calls"], 0)),
                    ),
                    ("every port", r["ports"]["wall"], calls.format(_fmt(r["ports"]["calls"], 0))),
                    ("both (full reconcile)", r.get("full_wall") or r["wall"], cost),
                ]
            for listing, wall, tail in rows:
                lines.append(
                    head + f"| {listing} | {_fmt(r['period'], 0)} "
                    f"| {_fmt(wall['median'], 3)} | {_fmt(wall['max'], 3)} " + tail
                )
    found = ratios(results)
    if found:
        lines += ["", "Ratios:", ""]
        lines += [f"- {key}: {_fmt(value)}x" for key, value in found.items()]
    checks = targets(results)
    if checks:
        lines += ["", "| target | value | met |", "|---|---|---|"]
        for check in checks:
            lines.append(
                f"| {check['target']} | {_fmt(check['value'], 3)} "
                f"| {'yes' if check['met'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def plot(results: dict, path: pathlib.Path) -> None:
    """Left: each node's latency (allowed, denied) per run and filter; right: CPU per
    reconcile at each size."""
    figure = Figure(figsize=(14, 5))
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    labels, position = [], 0
    for run in results.get("latency") or []:
        for name, figures in run["filters"].items():
            for offset, want in ((-0.15, "allow"), (0.15, "deny")):
                samples = figures[want]["samples"]
                left.scatter(
                    [position + offset] * len(samples),
                    samples,
                    s=8,
                    color=COLORS.get(name, "grey"),
                    marker="o" if want == "allow" else "x",
                )
            labels.append(f"{run['name']}\n{name}")
            position += 1
    left.set_xticks(range(len(labels)), labels, fontsize=7)
    left.set_yscale("symlog", linthresh=1.0)
    left.set_ylim(bottom=0)
    left.set_ylabel("seconds (o: inspect -> allowed, x: continue -> denied)")
    left.set_title("Latency per node")
    sizes = results.get("reconcile") or []
    for index, name in enumerate((OURS, THEIRS)):
        xs = [i + (index - 0.5) * 0.35 for i, s in enumerate(sizes) if s.get(name)]
        ys = [s[name]["cpu_per_reconcile"] for s in sizes if s.get(name)]
        right.bar(xs, ys, width=0.35, color=COLORS[name], label=f"{name} (its CPU)")
        ironic = [s[name]["ironic_cpu_per_reconcile"] for s in sizes if s.get(name)]
        right.scatter(xs, ironic, color="black", marker="_", s=200, zorder=3)
    right.set_xticks(range(len(sizes)), [f"{s['nodes']:,} nodes" for s in sizes])
    right.set_ylabel("CPU seconds per full reconcile (bar: filter; dash: Ironic)")
    right.set_title("Reconcile cost")
    right.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def update_doc(results: dict, doc: pathlib.Path, image: pathlib.Path) -> None:
    """Write the plot and the section of `doc` between its markers (appended when absent)."""
    plot(results, image)
    link = pathlib.Path(os.path.relpath(image, doc.parent)).as_posix()
    block = f"{BEGIN}\n{markdown(results, link)}{END}"
    text = doc.read_text()
    section = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    if section.search(text):
        doc.write_text(section.sub(lambda _: block, text, count=1))
    else:
        doc.write_text(text.rstrip("\n") + "\n\n" + block + "\n")
