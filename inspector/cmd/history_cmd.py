"""`inspector history NODE` and `inspector drift NODE`: a node's past introspections and
what changed in its hardware between two of them, read from the store as `inspector
status` does (a table by default, JSON with --json)."""

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from oslo_config import cfg

from inspector import conf as config
from inspector import store
from inspector.api.logs import setup_logging
from inspector.ironic.lazy import LazyIronic
from inspector.processing import comparison
from inspector.store.introspections import EntryRecord

#: Entries `inspector history` lists (the newest).
HISTORY_LIMIT = 100
#: Characters of a value shown in the drift table; --json gives them whole.
VALUE_WIDTH = 60


def _load(argv: list[str]) -> cfg.ConfigOpts:
    conf = config.load(argv)
    setup_logging(conf, command=True)
    return conf


def _node_uuid(conf: cfg.ConfigOpts, ident: str) -> str:
    """The node's UUID: as given, else its name looked up in Ironic."""
    try:
        import uuid  # noqa: PLC0415 - the standard library only, at run time

        return str(uuid.UUID(ident))
    except ValueError:
        return LazyIronic(conf).get_node(ident).uuid


def _stamp(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S}"


def _entry(entry: EntryRecord) -> dict[str, Any]:
    return {
        "id": entry.id,
        "source": entry.source,
        "state": entry.state,
        "started_at": None if entry.started_at is None else entry.started_at.isoformat(),
        "finished_at": None if entry.finished_at is None else entry.finished_at.isoformat(),
        "error": entry.error,
    }


def history_table(entries: list[EntryRecord]) -> str:
    """The entries, one a line, newest first."""
    lines = [f"{'ID':>8}  {'STATE':<9} {'STARTED (UTC)':<19}  {'FINISHED (UTC)':<19}  ERROR"]
    for e in entries:
        lines.append(
            f"{e.id:>8}  {e.state:<9} {_stamp(e.started_at):<19}  "
            f"{_stamp(e.finished_at):<19}  {e.error or ''}"
        )
    return "\n".join(lines) + "\n"


def _short(value: Any) -> str:
    text = "-" if value is None else json.dumps(value, sort_keys=True)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def drift_table(document: dict[str, Any]) -> str:
    """What changed, old -> new, a change a line; then the counts by category."""
    if document["to"] is None or document["from"] is None:
        return "No two finished introspections to compare.\n"
    lines = [f"Introspection {document['from']} -> {document['to']}:"]
    for change in document["changes"]:
        lines.append(
            f"  {change['kind']:<8} {change['path']}: "
            f"{_short(change['old'])} -> {_short(change['new'])}"
        )
    if not document["changes"]:
        lines.append("  no hardware change")
    counts = ", ".join(f"{k} {v}" for k, v in document["summary"].items() if v)
    lines.append(f"Summary: {counts or 'nothing changed'}")
    return "\n".join(lines) + "\n"


def run_history(args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv)
    node_uuid = _node_uuid(conf, args.node)
    db = store.Store.from_conf(conf)
    try:
        entries = db.history_page(node_uuid, limit=HISTORY_LIMIT)
    finally:
        db.close()
    if args.json:
        print(json.dumps([_entry(e) for e in entries], indent=2))
    elif not entries:
        print(f"Node {node_uuid} has no introspection history")
    else:
        sys.stdout.write(history_table(entries))
    return 0


def run_drift(args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv)
    node_uuid = _node_uuid(conf, args.node)
    db = store.Store.from_conf(conf)
    try:
        document = comparison.between(db, node_uuid, args.from_id, args.to_id)
    finally:
        db.close()
    if args.json:
        print(json.dumps(document, indent=2, sort_keys=True))
    else:
        sys.stdout.write(drift_table(document))
    return 0
