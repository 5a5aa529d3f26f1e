"""initial: nodes, lookup attributes, introspection data, rules, requests

Revision ID: 8c2d4e6f0a13
Revises:
Create Date: 2026-11-22 03:19:09.251778
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "8c2d4e6f0a13"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
#: Rolling upgrades: "expand" runs before new code starts, "contract" after all run it.
phase = "expand"

# Frozen copies of the models' types: a migration must not change with models.py.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
#: MySQL and MariaDB tables in utf8mb4 whatever the database's default (latin1 upstream,
#: where text beyond Latin-1 fails to store).
MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mariadb_charset": "utf8mb4"}
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def _node_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["node_uuid"],
        ["nodes.uuid"],
        name=op.f(f"fk_{table}_node_uuid_nodes"),
        ondelete="CASCADE",
    )


def _rule_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["rule_uuid"],
        ["rules.uuid"],
        name=op.f(f"fk_{table}_rule_uuid_rules"),
        ondelete="CASCADE",
    )


def _create_nodes() -> None:
    op.create_table(
        "nodes",
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("manage_boot", sa.Boolean(), server_default=sa.true(), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_nodes")),
        **MYSQL_TABLE,
    )
    op.create_index("ix_nodes_started_at_uuid", "nodes", ["started_at", "uuid"])
    op.create_index(op.f("ix_nodes_state"), "nodes", ["state"])
    op.create_table(
        "attributes",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        sa.Column("node_uuid", sa.String(36), nullable=False),
        _node_fk("attributes"),
        sa.PrimaryKeyConstraint("name", "value", "node_uuid", name=op.f("pk_attributes")),
        **MYSQL_TABLE,
    )
    op.create_index(op.f("ix_attributes_node_uuid"), "attributes", ["node_uuid"])
    op.create_table(
        "introspection_data",
        sa.Column("node_uuid", sa.String(36), nullable=False),
        sa.Column("processed", sa.Boolean(), nullable=False),
        sa.Column("data", LONG_TEXT, nullable=False),
        sa.Column("stored_at", TIMESTAMP, nullable=False),
        _node_fk("introspection_data"),
        sa.PrimaryKeyConstraint("node_uuid", "processed", name=op.f("pk_introspection_data")),
        **MYSQL_TABLE,
    )


def _create_requests() -> None:
    op.create_table(
        "requests",
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("node_uuid", sa.String(36), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("source_state", sa.String(32), nullable=True),
        sa.Column("target_state", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("applied_at", TIMESTAMP, nullable=False),
        sa.Column("done_at", TIMESTAMP, nullable=True),
        _node_fk("requests"),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_requests")),
        **MYSQL_TABLE,
    )
    op.create_index("ix_requests_node_uuid_applied_at", "requests", ["node_uuid", "applied_at"])


def _create_rules() -> None:
    op.create_table(
        "rules",
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("scope", sa.String(255), nullable=True),
        sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.PrimaryKeyConstraint("uuid", name=op.f("pk_rules")),
        **MYSQL_TABLE,
    )
    op.create_table(
        "rule_conditions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("rule_uuid", sa.String(36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("op", sa.String(255), nullable=False),
        sa.Column("field", sa.Text(), nullable=False),
        sa.Column("multiple", sa.String(255), nullable=False),
        sa.Column("invert", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("params", sa.Text(), nullable=False),
        _rule_fk("rule_conditions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rule_conditions")),
        **MYSQL_TABLE,
    )
    op.create_index(
        "ix_rule_conditions_rule_uuid_position",
        "rule_conditions",
        ["rule_uuid", "position"],
    )
    op.create_table(
        "rule_actions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("rule_uuid", sa.String(36), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(255), nullable=False),
        sa.Column("params", sa.Text(), nullable=False),
        _rule_fk("rule_actions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rule_actions")),
        **MYSQL_TABLE,
    )
    op.create_index("ix_rule_actions_rule_uuid_position", "rule_actions", ["rule_uuid", "position"])


def upgrade() -> None:
    _create_nodes()
    _create_requests()
    _create_rules()


def downgrade() -> None:
    # Children before parents; dropping a table drops its indexes.
    for table in (
        "rule_actions",
        "rule_conditions",
        "rules",
        "requests",
        "introspection_data",
        "attributes",
        "nodes",
    ):
        op.drop_table(table)
