"""ironic_snapshots: the node and its ports as read at the start of its introspection

Revision ID: b7e3d9a1c5f2
Revises: 6a2c8e4f1b37
Create Date: 2026-11-22 09:20:00.000000

Expand-only (one new table): code of the previous revision runs unchanged on it, and
new code without a snapshot reads Ironic as before.
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "b7e3d9a1c5f2"
down_revision: str | None = "6a2c8e4f1b37"
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
        "ironic_snapshots",
        sa.Column("node_uuid", sa.String(length=36), nullable=False),
        sa.Column("node", LONG_TEXT, nullable=False),
        sa.Column("ports", LONG_TEXT, nullable=True),
        sa.Column("taken_at", TIMESTAMP, nullable=False),
        sa.ForeignKeyConstraint(
            ["node_uuid"],
            ["nodes.uuid"],
            name=op.f("fk_ironic_snapshots_node_uuid_nodes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("node_uuid", name=op.f("pk_ironic_snapshots")),
        **MYSQL_TABLE,
    )


def downgrade() -> None:
    op.drop_table("ironic_snapshots")
