"""The fleet benchmark's report: the section of docs/performance.md between its markers
(the tables of bench.fleet.tables) and the docs/images/fleet-* plots (bench.fleet.plots).

Only reads the results; measures nothing.
"""

import os
import pathlib

from bench.fleet import tables
from bench.fleet.plots import plots, plotters

BEGIN, END = "<!-- bench/fleet begin -->", "<!-- bench/fleet end -->"

__all__ = ["BEGIN", "END", "markdown", "plots", "update_doc"]


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
    # The plots first, the tables after them.
    for name, title, _ in plotters(results):
        lines += ["", f"![{title}]({images}/{name})"]
    if results.get("command"):
        lines += ["", "```", results["command"], "```"]
    for section in (
        tables.floor_section,
        tables.steps_section,
        tables.batch_section,
        tables.engine_section,
        tables.time_section,
    ):
        lines += section(results)
    lines += tables.targets_section(results)
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
