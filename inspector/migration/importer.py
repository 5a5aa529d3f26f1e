"""Importing an ironic-inspector database into ours: node statuses, lookup attributes,
stored introspection data and rules, each compared with what we hold before anything is
written, so that a second run changes nothing. Never writes to the source; a dry run
writes nothing at all. Rule validation is the caller's (passed in): it is not the store's.
"""

import dataclasses
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, update
from sqlalchemy.orm import Session

from inspector import errors
from inspector.migration.ironic_inspector_db import Source, SourceNode, SourceRule
from inspector.migration.mapping import (
    WRITES,
    Outcome,
    Report,
    Status,
    Step,
    Validator,
    comparable,
    decide,
    decide_document,
    map_status,
    node_detail,
    wanted_attributes,
)
from inspector.store import Store, lookup, rules
from inspector.store.models import IntrospectionData, Node

LOG = logging.getLogger(__name__)


class _Moved(Exception):
    """Our node's version moved between the read and the write."""


@dataclasses.dataclass
class _Ours:
    status: Status | None
    version: int | None
    attributes: dict[str, list[str]]
    data: dict[bool, dict[str, Any] | None]


def _read_ours(session: Session, uuid: str) -> _Ours:
    node = session.get(Node, uuid, populate_existing=True)
    data = {p: lookup.get_data(session, uuid, processed=p) for p in (True, False)}
    if node is None:
        return _Ours(None, None, {}, data)
    status = Status(node.state, node.started_at, node.finished_at, node.error, node.manage_boot)
    return _Ours(status, node.version, lookup.attributes_of(session, uuid), data)


def import_node(
    store: Store,
    source: Source,
    node: SourceNode,
    attributes: dict[str, set[str]],
    *,
    dry_run: bool,
) -> list[Step]:
    """The steps for one node; applied in one transaction unless dry_run. Attributes and
    data follow the status: a node whose record we keep keeps its attributes and data."""
    wanted, note = map_status(node)
    if wanted is None:
        return [Step("node", node.uuid, Outcome.REJECT, note)]
    with store.session() as session:
        ours = _read_ours(session, node.uuid)
    outcome = decide(wanted, ours.status)
    steps = [Step("node", node.uuid, outcome, node_detail(outcome, wanted, ours.status, note))]
    if outcome == Outcome.KEEP:
        return steps
    wanted_attrs = wanted_attributes(attributes)
    attr_outcome = decide_document(wanted_attrs, ours.attributes)
    if attr_outcome is not None:
        shown = "; ".join(f"{name} {', '.join(v)}" for name, v in wanted_attrs.items())
        steps.append(Step("attributes", node.uuid, attr_outcome, shown))
    documents = source.data(node.uuid)
    data: dict[bool, tuple[dict[str, Any] | None, Outcome]] = {}
    for processed, kind in ((True, "processed data"), (False, "raw data")):
        document = documents.get(processed)
        data_outcome = decide_document(document, ours.data[processed])
        if data_outcome is not None:
            steps.append(Step(kind, node.uuid, data_outcome))
            data[processed] = (document, data_outcome)
    if dry_run or not any(step.outcome in WRITES for step in steps):
        return steps
    try:
        with store.session() as session:
            _write_status(
                session, node.uuid, wanted, outcome, version=ours.version, now=store.clock()
            )
            if attr_outcome in WRITES:
                lookup.set_attributes(session, node.uuid, wanted_attrs)
            _write_data(session, node.uuid, data, store.clock())
    except _Moved:
        return [Step("node", node.uuid, Outcome.KEEP, "changed in Inspector during the import")]
    except errors.Conflict:
        return [Step("node", node.uuid, Outcome.KEEP, "created in Inspector during the import")]
    return steps


def _write_status(
    session: Session,
    uuid: str,
    wanted: Status,
    outcome: Outcome,
    *,
    version: int | None,
    now: datetime,
) -> None:
    fields = dataclasses.asdict(wanted)
    if outcome == Outcome.CREATE:
        session.add(Node(uuid=uuid, version=1, updated_at=now, **fields))
        session.flush()
        return
    # A compare-and-swap on the version we read: a worker that moved the node since wins.
    # Unchanged, it only locks the row while the attributes and data are written.
    values: dict[str, Any] = {"version": Node.version}
    if outcome == Outcome.UPDATE:
        values = {**fields, "version": Node.version + 1, "updated_at": now}
    statement = (
        update(Node)
        .where(Node.uuid == uuid, Node.version == version)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if cast(CursorResult[Any], session.execute(statement)).rowcount != 1:
        raise _Moved(uuid)


def _write_data(
    session: Session,
    uuid: str,
    data: dict[bool, tuple[dict[str, Any] | None, Outcome]],
    now: datetime,
) -> None:
    for processed, (document, outcome) in data.items():
        if outcome == Outcome.DELETE:
            session.execute(
                delete(IntrospectionData).where(
                    IntrospectionData.node_uuid == uuid, IntrospectionData.processed == processed
                )
            )
        elif outcome in WRITES and document is not None:
            connection = session.connection()
            lookup.store_data(connection, uuid, document, processed=processed, now=now)


def import_rule(store: Store, rule: SourceRule, validate: Validator, *, dry_run: bool) -> Step:
    """Validated as POST /v1/rules validates; created with ironic-inspector's creation time,
    which keeps the evaluation order. Rules are immutable: a different one with the same
    uuid is left alone."""
    label = f'"{rule.description}"' if rule.description else ""
    if rule.disabled:
        return Step("rule", rule.uuid, Outcome.REJECT, "disabled in ironic-inspector")
    try:
        validated = validate(rule.document())
    except errors.BadRequest as error:
        return Step("rule", rule.uuid, Outcome.REJECT, error.message)
    try:
        ours = store.get_rule(validated["uuid"])
    except errors.NotFound:
        ours = None
    if ours is not None:
        if comparable(ours) == comparable(validated):
            return Step("rule", rule.uuid, Outcome.UNCHANGED, label)
        detail = "Inspector has a different rule with this uuid (rules are immutable)"
        return Step("rule", rule.uuid, Outcome.KEEP, detail)
    if not dry_run:
        try:
            with store.session() as session:
                rules.create(session, validated, now=rule.created_at or store.clock())
        except errors.Conflict:
            return Step("rule", rule.uuid, Outcome.KEEP, "created in Inspector during the import")
    return Step("rule", rule.uuid, Outcome.CREATE, label)


def run(
    source: Source,
    store: Store,
    *,
    validate_rule: Validator,
    dry_run: bool,
    on_step: Callable[[Step], None] | None = None,
) -> Report:
    """Import every node (status, attributes, data) then every rule; `on_step` sees each
    step as it happens."""
    report = Report(dry_run=dry_run)

    def record(step: Step) -> None:
        report.steps.append(step)
        if step.outcome != Outcome.UNCHANGED:
            LOG.info("%s", step.render(dry_run))
        if on_step is not None:
            on_step(step)

    attributes = source.attributes()
    for node in source.nodes():
        for step in import_node(
            store, source, node, attributes.get(node.uuid, {}), dry_run=dry_run
        ):
            record(step)
    for rule in source.rules():
        record(import_rule(store, rule, validate_rule, dry_run=dry_run))
    return report
