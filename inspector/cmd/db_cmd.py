"""`inspector db upgrade|version`: database schema migrations (alembic), in the expand
and contract phases of a rolling upgrade; `inspector db import-ironic-inspector`."""

import argparse

from oslo_config import cfg

from inspector import conf as config
from inspector import errors, store
from inspector.api import schemas
from inspector.api.logs import setup_logging
from inspector.migration import importer
from inspector.migration.ironic_inspector_db import Source
from inspector.processing import rule_schema
from inspector.store import schema


def _load(argv: list[str]) -> cfg.ConfigOpts:
    conf = config.load(argv)
    setup_logging(conf, command=True)
    return conf


def _describe(revisions: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} ({phase})" for name, phase in revisions) or "none"


def run_upgrade(args: argparse.Namespace, argv: list[str]) -> int:
    url = store.database_url(_load(argv))
    before = schema.pending(schema.current_revision(url)) or []
    old, new = schema.upgrade(url, args.phase)
    after = schema.pending(new) or []
    applied = [revision for revision in before if revision not in after]
    where = "head" if not after else f"{len(after)} revision(s) to go"
    if old == new:
        print(f"database schema already at {new} ({where})")
    else:
        print(f"database schema upgraded from {old or 'empty'} to {new} ({where})")
        print(f"applied: {_describe(applied)}")
    if after:
        print(
            f"pending: {_describe(after)}; run `inspector db upgrade --contract` once every "
            "process runs this release"
        )
    return 0


def run_version(_args: argparse.Namespace, argv: list[str]) -> int:
    url = store.database_url(_load(argv))
    current = schema.current_revision(url)
    head = schema.head_revision()
    if current is None:
        print(f"no schema (run `inspector db upgrade`); head is {head}")
        return 1
    left = schema.pending(current)
    if left is None:
        print(f"{current} (newer than this release's head {head})")
        return 0
    if not left:
        print(f"{current} (head)")
        return 0
    print(f"{current} (head is {head}; pending: {_describe(left)})")
    return 0 if schema.compatibility(current) == "ok" else 1


def _validate_rule(document: dict) -> dict:
    """As POST /v1/rules validates its body: the JSON Schema, then the rule vocabulary."""
    return rule_schema.validate_rule(schemas.validate(document, schemas.RULE, "rule"))


def run_import(args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv)
    url = store.database_url(conf)
    compatible = schema.compatibility(schema.current_revision(url))
    if compatible == "newer":
        compatible = "the database schema is newer than this release: import with that release"
    if compatible != "ok":
        raise errors.Conflict(f"cannot import: {compatible}")
    with Source(args.source_connection) as source:
        target = store.Store.from_conf(conf)
        try:
            report = importer.run(
                source,
                target,
                validate_rule=_validate_rule,
                dry_run=args.dry_run,
                on_step=lambda step: _print_step(step, args.dry_run),
            )
        finally:
            target.close()
    print(report.summary())
    return 0


def _print_step(step: importer.Step, dry_run: bool) -> None:
    if step.outcome != importer.Outcome.UNCHANGED:
        print(step.render(dry_run), flush=True)
