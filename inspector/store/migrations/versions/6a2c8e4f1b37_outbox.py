"""outbox: notifications written with the state changes they tell of

Revision ID: 6a2c8e4f1b37
Revises: 3f1a9b7c5d20
Create Date: 2026-11-22 06:40:00.000000

Expand-only (one new table): code of the previous revision runs unchanged on it.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "6a2c8e4f1b37"
down_revision: str | None = "3f1a9b7c5d20"
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


def upgrade() -> None:
    op.create_table(
        "notifications",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("node_uuid", sa.String(length=36), nullable=False),
        sa.Column("payload", LONG_TEXT, nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("due_at", TIMESTAMP, nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("delivered_at", TIMESTAMP, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notifications")),
        **MYSQL_TABLE,
    )
    op.create_index(
        "ix_notifications_delivered_at_due_at", "notifications", ["delivered_at", "due_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_notifications_delivered_at_due_at", table_name="notifications")
    op.drop_table("notifications")
