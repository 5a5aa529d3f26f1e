"""Introspection rules: create, read, list, delete, with ordered conditions and actions.

Rules are immutable once created. Conditions and actions keep their extra keys (value,
path, ...) as JSON `params`; records come back as plain dicts in the API's shape.
"""

import json
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.orm import Session

from inspector import errors
from inspector.store.models import Rule, RuleAction, RuleCondition

CONDITION_KEYS = ("op", "field", "multiple", "invert")


def create(session: Session, rule: dict[str, Any], *, now: datetime) -> dict[str, Any]:
    """Insert a validated rule; Conflict when its uuid exists."""
    if session.get(Rule, rule["uuid"]) is not None:
        raise errors.Conflict(f"Rule with UUID {rule['uuid']} already exists")
    session.add(
        Rule(
            uuid=rule["uuid"],
            created_at=now,
            description=rule.get("description"),
            scope=rule.get("scope"),
            disabled=False,
        )
    )
    for position, condition in enumerate(rule.get("conditions", ())):
        params = {k: v for k, v in condition.items() if k not in CONDITION_KEYS}
        session.add(
            RuleCondition(
                rule_uuid=rule["uuid"],
                position=position,
                op=condition["op"],
                field=condition["field"],
                multiple=condition.get("multiple", "any"),
                invert=bool(condition.get("invert", False)),
                params=json.dumps(params, sort_keys=True),
            )
        )
    for position, action in enumerate(rule["actions"]):
        params = {k: v for k, v in action.items() if k != "action"}
        session.add(
            RuleAction(
                rule_uuid=rule["uuid"],
                position=position,
                action=action["action"],
                params=json.dumps(params, sort_keys=True),
            )
        )
    session.flush()
    return get(session, rule["uuid"])


def _conditions(session: Session, uuid: str) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(RuleCondition)
        .where(RuleCondition.rule_uuid == uuid)
        .order_by(RuleCondition.position)
    )
    return [
        {
            "op": row.op,
            "field": row.field,
            "multiple": row.multiple,
            "invert": row.invert,
            **json.loads(row.params),
        }
        for row in rows
    ]


def _actions(session: Session, uuid: str) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(RuleAction).where(RuleAction.rule_uuid == uuid).order_by(RuleAction.position)
    )
    return [{"action": row.action, **json.loads(row.params)} for row in rows]


def get(session: Session, uuid: str) -> dict[str, Any]:
    rule = session.get(Rule, uuid)
    if rule is None:
        raise errors.NotFound(f"Rule {uuid} was not found")
    return {
        "uuid": rule.uuid,
        "description": rule.description,
        "scope": rule.scope,
        "conditions": _conditions(session, uuid),
        "actions": _actions(session, uuid),
    }


def summaries(session: Session) -> list[dict[str, Any]]:
    """Every rule's uuid, description and scope, in creation order."""
    rows = session.scalars(select(Rule).order_by(Rule.created_at, Rule.uuid))
    return [{"uuid": r.uuid, "description": r.description, "scope": r.scope} for r in rows]


#: The uuids of the enabled rules, in creation order (the Store prepares it: read at
#: every processing, when most sites have no rule at all).
ENABLED = (
    select(Rule.__table__.c.uuid)
    .where(Rule.__table__.c.disabled.is_(False))
    .order_by(Rule.__table__.c.created_at, Rule.__table__.c.uuid)
)


def full(session: Session, uuids: list[str]) -> list[dict[str, Any]]:
    """The rules of `uuids` in full, in that order; one gone meanwhile is left out."""
    found = []
    for uuid in uuids:
        try:
            found.append(get(session, uuid))
        except errors.NotFound:
            continue
    return found


def remove(session: Session, uuid: str) -> None:
    result = cast(CursorResult[Any], session.execute(delete(Rule).where(Rule.uuid == uuid)))
    if result.rowcount != 1:
        raise errors.NotFound(f"Rule {uuid} was not found")


def remove_all(session: Session) -> None:
    session.execute(delete(Rule))
