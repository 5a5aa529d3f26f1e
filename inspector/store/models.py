"""The store's tables as SQLAlchemy 2 declarative models: what the migrations build.

Only table definitions live here; no queries, no sessions, no engine. ORM objects never
leave a session: query modules turn them into frozen records.
"""

from datetime import datetime
from typing import ClassVar

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    false,
    true,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

#: Deterministic constraint and index names on every backend, so that later migrations
#: can drop or alter them by name.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Naive UTC timestamps; MySQL's DATETIME drops sub-seconds unless asked for them.
Timestamp = DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
#: JSON documents stored as text; MySQL's TEXT stops at 64 KiB, inventories do not.
JSONText = Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")

UUID_LENGTH = 36


def _node_fk() -> ForeignKey:
    return ForeignKey("nodes.uuid", ondelete="CASCADE")


def _rule_fk() -> ForeignKey:
    return ForeignKey("rules.uuid", ondelete="CASCADE")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    #: Declared a Table: SQLAlchemy types `__table__` as the wider FromClause.
    __table__: ClassVar[Table]


class Node(Base):
    """One node's introspection: its state and the version every change swaps on."""

    __tablename__ = "nodes"
    __table_args__ = (Index("ix_nodes_started_at_uuid", "started_at", "uuid"),)

    uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    state: Mapped[str] = mapped_column(String(32), index=True)
    version: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime | None] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
    error: Mapped[str | None] = mapped_column(Text)
    manage_boot: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    updated_at: Mapped[datetime] = mapped_column(Timestamp)


class Attribute(Base):
    """A lookup attribute (MAC, BMC address...) pointing at the node it identifies."""

    __tablename__ = "attributes"
    # The primary key leads with (name, value): the ramdisk lookup uses its index.
    __table_args__ = (PrimaryKeyConstraint("name", "value", "node_uuid"),)

    name: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(String(255))
    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _node_fk(), index=True)


class IntrospectionData(Base):
    """The ramdisk's raw payload (processed=False) and the processed result."""

    __tablename__ = "introspection_data"
    __table_args__ = (PrimaryKeyConstraint("node_uuid", "processed"),)

    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _node_fk())
    processed: Mapped[bool] = mapped_column(Boolean)
    data: Mapped[str] = mapped_column(JSONText)
    stored_at: Mapped[datetime] = mapped_column(Timestamp)


class Introspection(Base):
    """One ended (finished or failed) introspection of a node, with its data: the node's
    history, up to [processing] history_keep per node. No foreign key: the history
    outlives the expiry of the node's current status, and goes when Ironic drops it."""

    __tablename__ = "introspections"
    # One entry per node and start: recording an introspection again replaces it.
    __table_args__ = (
        Index("ix_introspections_node_uuid_started_at", "node_uuid", "started_at", unique=True),
        Index("ix_introspections_node_uuid_id", "node_uuid", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH))
    source: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(32))
    started_at: Mapped[datetime] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
    error: Mapped[str | None] = mapped_column(Text)
    raw: Mapped[str | None] = mapped_column(JSONText)
    processed: Mapped[str | None] = mapped_column(JSONText)


class IronicSnapshot(Base):
    """The Ironic node and its ports as read when the node's introspection started."""

    __tablename__ = "ironic_snapshots"

    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _node_fk(), primary_key=True)
    node: Mapped[str] = mapped_column(JSONText)
    ports: Mapped[str | None] = mapped_column(JSONText)
    taken_at: Mapped[datetime] = mapped_column(Timestamp)


class Rule(Base):
    """An introspection rule; its conditions and actions are ordered by position."""

    __tablename__ = "rules"

    uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    description: Mapped[str | None] = mapped_column(Text)
    scope: Mapped[str | None] = mapped_column(String(255))
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class RuleCondition(Base):
    __tablename__ = "rule_conditions"
    __table_args__ = (Index("ix_rule_conditions_rule_uuid_position", "rule_uuid", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _rule_fk())
    position: Mapped[int] = mapped_column(Integer)
    op: Mapped[str] = mapped_column(String(255))
    field: Mapped[str] = mapped_column(Text)
    multiple: Mapped[str] = mapped_column(String(255))
    invert: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    params: Mapped[str] = mapped_column(Text)


class RuleAction(Base):
    __tablename__ = "rule_actions"
    __table_args__ = (Index("ix_rule_actions_rule_uuid_position", "rule_uuid", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    rule_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _rule_fk())
    position: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(255))
    params: Mapped[str] = mapped_column(Text)


class Request(Base):
    """A transition request a worker applied: how a redelivery is recognised.

    status is 'applied' once the state change committed, 'ran' once a strict event's
    task finished, 'done' once its task finished and the follow-up was enqueued,
    'interrupted' when a backend outage stopped its task, 'rejected' when the state
    machine refused it. `version` is the node's version right after the change. The rows are also
    the node's history.
    """

    __tablename__ = "requests"
    # Leads with node_uuid, so it also serves the foreign key and per-node lookups.
    __table_args__ = (Index("ix_requests_node_uuid_applied_at", "node_uuid", "applied_at"),)

    request_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH), _node_fk())
    event: Mapped[str] = mapped_column(String(32))
    source_state: Mapped[str | None] = mapped_column(String(32))
    target_state: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))
    version: Mapped[int | None] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    applied_at: Mapped[datetime] = mapped_column(Timestamp)
    done_at: Mapped[datetime | None] = mapped_column(Timestamp)


#: The schema, for migrations and for comparing a database against the models.
metadata = Base.metadata


class Marker(Base):
    """A named, cluster-wide fact: a singleton's leadership term (`leader:<kind>`, its
    fencing token) or the reboot throttle's last power-on (`reboot-throttle`)."""

    __tablename__ = "markers"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    term: Mapped[int] = mapped_column(Integer)
    holder: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime] = mapped_column(Timestamp)


class TaskRun(Base):
    """One run of a leader's periodic task, recorded for operators and overlap checks."""

    __tablename__ = "task_runs"
    __table_args__ = (Index("ix_task_runs_task_started_at", "task", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    task: Mapped[str] = mapped_column(String(64))
    holder: Mapped[str] = mapped_column(String(255))
    term: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(Timestamp)
    finished_at: Mapped[datetime | None] = mapped_column(Timestamp)
    outcome: Mapped[str | None] = mapped_column(Text)


class Notification(Base):
    """The outbox: a notification written with the state change it tells of, kept until
    every notification driver accepted it (at-least-once, `id` stable across retries)."""

    __tablename__ = "notifications"
    __table_args__ = (Index("ix_notifications_delivered_at_due_at", "delivered_at", "due_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    event_type: Mapped[str] = mapped_column(String(64))
    node_uuid: Mapped[str] = mapped_column(String(UUID_LENGTH))
    payload: Mapped[str] = mapped_column(JSONText)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    due_at: Mapped[datetime] = mapped_column(Timestamp)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    delivered_at: Mapped[datetime | None] = mapped_column(Timestamp)
    last_error: Mapped[str | None] = mapped_column(Text)
