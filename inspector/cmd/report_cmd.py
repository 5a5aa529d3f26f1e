"""`inspector report`: the fleet hardware report (inspector.processing.hardware_report) over
this deployment's database, printed as a table, JSON or CSV, and drawn as a bar chart
(matplotlib, the `report` extra)."""

import argparse
import csv
import io
import json
import sys
from typing import Any

from inspector import conf as config
from inspector import store
from inspector.api.logs import setup_logging
from inspector.errors import ConfigError
from inspector.processing import hardware_report

#: Groups a chart draws at most (the largest); the rest are summed in one bar.
MAX_BARS = 30


def run_report(args: argparse.Namespace, argv: list[str]) -> int:
    conf = config.load(argv)
    setup_logging(conf, command=True)
    db = store.Store.from_conf(conf)
    try:
        rows = db.processed_data(names=args.nodes)
        report = hardware_report.build(args.by, rows, members=args.nodes)
    finally:
        db.close()
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.csv:
        sys.stdout.write(to_csv(report))
    else:
        sys.stdout.write(table(report))
    if args.plot:
        plot(report, args.plot)
    return 0


def table(report: dict[str, Any]) -> str:
    """The report as aligned text: one line per group, its nodes under it on request."""
    width = max([len(g["label"]) for g in report["groups"]] + [len(report["by"])])
    lines = [f"{report['by']:<{width}}  {'nodes':>6}  {'items':>6}  {'changed':>7}"]
    for group in report["groups"]:
        lines.append(
            f"{group['label']:<{width}}  {group['nodes']:>6}  {group['items']:>6}  "
            f"{group['changed']:>7}"
        )
        for member in group.get("members", []):
            lines.append(f"    {member['uuid']}  {member['name'] or ''}".rstrip())
    lines.append(f"{report['nodes']} nodes with processed data")
    return "\n".join(lines) + "\n"


def to_csv(report: dict[str, Any]) -> str:
    """One row per group: the category, the key's fields, the counts (and the nodes'
    uuids, space-separated, on request)."""
    fields = sorted({name for group in report["groups"] for name in group["key"]})
    members = any("members" in group for group in report["groups"])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["by", "group", *fields, "nodes", "items", "changed"]
    writer.writerow(header + (["node_uuids"] if members else []))
    for group in report["groups"]:
        key = ["" if group["key"].get(f) is None else group["key"][f] for f in fields]
        row = [report["by"], group["label"], *key, group["nodes"], group["items"], group["changed"]]
        if members:
            row.append(" ".join(m["uuid"] for m in group["members"]))
        writer.writerow(row)
    return out.getvalue()


def plot(report: dict[str, Any], path: str) -> None:
    """A horizontal bar per group (nodes, and those that changed), written to path (PNG)."""
    try:
        import matplotlib  # noqa: PLC0415 (optional: the report extra)

        matplotlib.use("Agg")
        from matplotlib import pyplot  # noqa: PLC0415
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'inspector[report]'") from None
    groups = report["groups"][:MAX_BARS]
    rest = report["groups"][MAX_BARS:]
    labels = [g["label"] for g in groups] + ([f"{len(rest)} more groups"] if rest else [])
    nodes = [g["nodes"] for g in groups] + ([sum(g["nodes"] for g in rest)] if rest else [])
    changed = [g["changed"] for g in groups] + ([sum(g["changed"] for g in rest)] if rest else [])
    figure, axes = pyplot.subplots(figsize=(10, 1.5 + 0.35 * max(len(labels), 1)))
    try:
        positions = range(len(labels))
        axes.barh(positions, nodes, label="nodes")
        axes.barh(positions, changed, label="changed at the last introspection")
        axes.set_yticks(list(positions), labels=labels)
        axes.invert_yaxis()
        axes.set_xlabel("nodes")
        axes.set_title(f"Fleet by {report['by']} ({report['nodes']} nodes)")
        axes.legend(loc="lower right")
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        pyplot.close(figure)
