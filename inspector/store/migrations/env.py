"""Alembic environment: runs the migrations on the connection schema.py passes in.

Configured in code (no alembic.ini, no logging setup here); SQLite gets batch mode.
"""

from alembic import context

from inspector.store.models import metadata

connection = context.config.attributes.get("connection")
if context.is_offline_mode() or connection is None:
    raise RuntimeError("run migrations through inspector.store.schema, online")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
