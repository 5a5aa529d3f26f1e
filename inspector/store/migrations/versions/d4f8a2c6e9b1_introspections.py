"""introspections: every ended introspection of a node with its data (its history)

Revision ID: d4f8a2c6e9b1
Revises: b7e3d9a1c5f2
Create Date: 2026-11-28 12:50:00.000000

Expand-only (one new table): code of the previous revision runs unchanged on it and
keeps no history.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "d4f8a2c6e9b1"
down_revision: str | None = "b7e3d9a1c5f2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
#: Rolling upgrades: "expand" runs before new code starts, "contract" after all run it.
phase = "expand"

# Frozen copies of the models' types: a migration must not change with models.py.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
#: MySQL and MariaDB tables in utf8mb4 whatever the database's default.
MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mariadb_charset": "utf8mb4"}
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "introspections",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("node_uuid", sa.String(length=36), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("raw", LONG_TEXT, nullable=True),
        sa.Column("processed", LONG_TEXT, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_introspections")),
        **MYSQL_TABLE,
    )
    op.create_index(
        "ix_introspections_node_uuid_started_at",
        "introspections",
        ["node_uuid", "started_at"],
        unique=True,
    )
    op.create_index("ix_introspections_node_uuid_id", "introspections", ["node_uuid", "id"])


def downgrade() -> None:
    op.drop_table("introspections")
