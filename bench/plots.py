"""The plots of the single-file benchmarks (api, worker, failover, startup, recovery),
drawn from their results into docs/images/, and how each of them publishes a run:
results to JSON, plot, section of docs/performance.md, or with `--plot-only` the plot
and the section again from the saved results, without measuring.

Only reads results; measures nothing. (bench/fleet and bench/pxe_filter draw their own.)
"""

import argparse
import json
import pathlib

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

ROOT = pathlib.Path(__file__).resolve().parents[1]
OURS, LIMIT = "tab:blue", "tab:red"


def add_arguments(parser):
    """The options every benchmark publishing through `publish` takes (besides --out)."""
    parser.add_argument(
        "--no-doc", action="store_true", help="do not touch docs/ (the page and the plot)"
    )
    parser.add_argument(
        "--plot-only",
        action="store_true",
        help="measure nothing: redraw the plot and the page's section from --out",
    )


def _results(args, measure):
    """Measured and saved to --out, or with --plot-only read from it."""
    out = pathlib.Path(args.out)
    if args.plot_only:
        return json.loads(out.read_text())
    results = measure(args)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def text_bench(description, out, options, measure, markdown, name):
    """The command line of a benchmark without a plot: its integer `options` (flag ->
    default), --out (default bench/results/`out`), then `publish_text`."""
    parser = argparse.ArgumentParser(description=description)
    for flag, default in options.items():
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / out))
    add_arguments(parser)
    return publish_text(parser.parse_args(), measure, markdown, name)


def publish(args, measure, markdown, draw, name, image, title, root=ROOT):
    """Measure (or with --plot-only read --out), save the results, draw `image` and
    replace the benchmark's section `name` of docs/performance.md, the plot under its
    heading."""
    results = _results(args, measure)
    heading, _, rest = markdown(results).partition("\n")
    images = root / "docs" / "images"
    section = f"{heading}\n\n![{title}](images/{image})\n{rest}"
    if not args.no_doc:
        figure = Figure(figsize=(10, 4.5))
        FigureCanvasAgg(figure)
        draw(results, figure)
        figure.tight_layout()
        images.mkdir(parents=True, exist_ok=True)
        figure.savefig(images / image, dpi=100)
        update_doc(section, name, root / "docs" / "performance.md")
    print(section)
    return results


def publish_text(args, measure, markdown, name, root=ROOT):
    """`publish` for a benchmark without a plot: measure (or with --plot-only read --out),
    save the results, replace its section `name` of docs/performance.md unless --no-doc."""
    results = _results(args, measure)
    section = markdown(results)
    if not args.no_doc:
        update_doc(section, name, root / "docs" / "performance.md")
    print(section)
    return results


def how_to_run(command, services="postgresql"):
    """The lines ending a section: the command that measured it, on which services."""
    return [
        "",
        "```",
        f'scripts/services start {services}; eval "$(scripts/services env)"',
        command,
        "```",
        "",
    ]


def update_doc(section, name, doc=ROOT / "docs" / "performance.md"):
    """Replace (or append) the section between the markers named after the benchmark."""
    begin, end = f"<!-- {name} begin -->", f"<!-- {name} end -->"
    text = doc.read_text() if doc.exists() else "# Performance\n"
    block = f"{begin}\n{section}{end}"
    if begin in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)


def api(results, figure):
    """Left: requests/s of each endpoint (the ceiling first); right: each round's status
    read over the ceiling, against the 50% target."""
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    rows = [
        ("trivial Flask\n(ceiling)", results["ceiling"]),
        ("GET status", results["status"]),
        ("POST continue\n50 conn.", results["continue"]),
        ("POST continue\n4 conn.", results["continue_4"]),
    ]
    rates = [row["requests_per_second"] for _, row in rows]
    left.bar(range(len(rows)), rates, color=["grey", OURS, OURS, OURS])
    for index, row in enumerate(rows):
        left.annotate(
            f"p99 {row[1]['p99_ms']:.0f} ms",
            (index, rates[index]),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    left.set_xticks(range(len(rows)), [label for label, _ in rows], fontsize=8)
    left.set_ylabel("requests per second")
    left.set_title("Rates under gunicorn (wrk, closed loop)")
    ratios = [100 * r["ratio"] for r in results["rounds"]]
    right.plot(range(1, len(ratios) + 1), ratios, "o-", color=OURS, label="status / ceiling")
    right.axhline(50, color=LIMIT, linestyle="--", label="target >= 50%")
    right.set_xticks(range(1, len(ratios) + 1))
    right.set_ylim(0, 100)
    right.set_xlabel("round")
    right.set_ylabel("% of the ceiling")
    right.set_title("Status reads, round by round")
    right.legend(fontsize=8)


def worker(results, figure):
    """Transitions per second with 1 and 2 processes per queue, and each transition's
    cost against the sum of its parts."""
    left, right = figure.subplots(1, 2)
    names = list(results["scenarios"])
    scenarios = [results["scenarios"][name] for name in names]
    for offset, key, label in (
        (-0.2, "one_process", "1 process"),
        (0.2, "two_processes", "2 processes"),
    ):
        xs = [i + offset for i in range(len(names))]
        ys = [s[key]["per_second"] for s in scenarios]
        left.bar(xs, ys, 0.4, label=label)
        for x, y, s in zip(xs, ys, scenarios, strict=True):
            busy = f"cores {s[key]['machine_cpu_busy']:.0%} busy"
            left.annotate(busy, (x, y), ha="center", va="bottom", fontsize=7)
    left.set_xticks(range(len(names)), names)
    left.set_ylabel("transitions per second")
    left.set_title("Throughput (target: 2 processes >= 1.6x one)")
    left.legend(fontsize=8, loc="lower center")
    for offset, key, label in (
        (-0.2, "transition_ms_single_thread", "one transition"),
        (0.2, "sum_of_parts_ms", "sum of its parts"),
    ):
        xs = [i + offset for i in range(len(names))]
        right.bar(xs, [s[key] for s in scenarios], 0.4, label=label)
    right.set_xticks(range(len(names)), names)
    right.set_ylabel("ms, one worker thread")
    right.set_title("Cost (target: at most 2x its parts)")
    right.legend(fontsize=8)


def failover(results, figure):
    """Each round's time to a new leader, per signal, against its target."""
    axes = figure.subplots(1, len(results["series"]))
    names = {"kill": "kill -9", "sigterm": "SIGTERM"}
    for ax, (how, series) in zip(axes, results["series"].items(), strict=True):
        rounds = range(1, len(series["seconds"]) + 1)
        ax.plot(rounds, series["seconds"], "o", color=OURS, label="a round")
        ax.axhline(series["median"], color=OURS, label=f"median {series['median']:.2f} s")
        ax.axhline(series["target"], color=LIMIT, linestyle="--", label="target")
        ax.set_ylim(0, series["target"] * 1.1)
        ax.set_xlabel("round")
        ax.set_ylabel("seconds to the new leader's first run")
        ax.set_title(names.get(how, how))
        ax.legend(fontsize=8)


def startup(results, figure):
    """Left: each command's wall time over the bare interpreter's (target 10x);
    right: each service's time until it takes work (target 2 s)."""
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    commands = results["commands"]
    left.barh(list(commands), [c["wall_ratio"] for c in commands.values()], color=OURS)
    left.axvline(10, color=LIMIT, linestyle="--", label="target < 10x")
    left.invert_yaxis()
    left.set_xlabel("wall time / bare interpreter's")
    left.set_title("Commands")
    left.legend(fontsize=8)
    services = results.get("services") or {}
    for index, entry in enumerate(services.values()):
        ready = [run["ready_s"] for run in entry["runs"]]
        right.plot([index] * len(ready), ready, "o", color=OURS)
    right.axhline(2, color=LIMIT, linestyle="--", label="target < 2 s")
    right.set_xticks(range(len(services)), list(services))
    right.set_xlim(-0.5, len(services) - 0.5)
    right.set_ylim(bottom=0)
    right.set_ylabel("seconds from start to ready (each start)")
    right.set_title("Services")
    right.legend(fontsize=8)


def recovery(results, figure):
    """Per backend: the baseline introspection and each round's recovery after the
    backend's return."""
    ax = figure.subplots()
    backends = results["backends"]
    for index, result in enumerate(backends.values()):
        ax.bar(index, result["baseline"]["median"], 0.5, color="grey")
        seconds = result["recovery"]["seconds"]
        ax.plot([index] * len(seconds), seconds, "o", color=OURS)
    ax.set_xticks(
        range(len(backends)), [f"{name}\n({r['service']})" for name, r in backends.items()]
    )
    ax.set_ylabel("seconds to a finished introspection")
    ax.set_title(
        f"After a {results['settings']['outage_seconds']:g} s outage "
        "(bar: baseline median, dots: recovery rounds)"
    )
