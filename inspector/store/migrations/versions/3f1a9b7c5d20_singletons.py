"""singletons: leadership terms and throttle marks, periodic task runs

Revision ID: 3f1a9b7c5d20
Revises: 8c2d4e6f0a13
Create Date: 2026-11-22 06:20:00.000000

Expand-only (two new tables): code of the previous revision runs unchanged on it.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "3f1a9b7c5d20"
down_revision: str | None = "8c2d4e6f0a13"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None
#: Rolling upgrades: "expand" runs before new code starts, "contract" after all run it.
phase = "expand"

# Frozen copy of the models' timestamp type: a migration must not change with models.py.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
#: MySQL and MariaDB tables in utf8mb4 whatever the database's default (latin1 upstream,
#: where text beyond Latin-1 fails to store).
MYSQL_TABLE: dict[str, Any] = {"mysql_charset": "utf8mb4", "mariadb_charset": "utf8mb4"}


def upgrade() -> None:
    op.create_table(
        "markers",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("term", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_markers")),
        **MYSQL_TABLE,
    )
    op.create_table(
        "task_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("term", sa.Integer(), nullable=False),
        sa.Column("started_at", TIMESTAMP, nullable=False),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.Column("outcome", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_runs")),
        **MYSQL_TABLE,
    )
    op.create_index("ix_task_runs_task_started_at", "task_runs", ["task", "started_at"])


def downgrade() -> None:
    op.drop_index("ix_task_runs_task_started_at", table_name="task_runs")
    op.drop_table("task_runs")
    op.drop_table("markers")
