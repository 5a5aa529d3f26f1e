"""Schema migrations (alembic, configured in code): upgrade, current and head revision.

Runs the scripts in `migrations/`; it never creates tables from the models directly.
"""

import pathlib

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection

from inspector import errors
from inspector.store import engine as engines

#: The alembic scripts, shipped as package data.
MIGRATIONS = pathlib.Path(__file__).parent / "migrations"
#: pg_advisory_xact_lock key: concurrent `inspector db upgrade` run one at a time.
PG_MIGRATION_LOCK = 0x1A5BEC70


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision the shipped migrations know."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    if head is None:
        raise errors.InspectorError(f"no migrations found in {MIGRATIONS}")
    return head


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def current_revision(url: str) -> str | None:
    """The database's revision; None when it has no schema yet."""
    engine = engines.create_engine(url)
    try:
        with engines.translate_errors(engine), engine.connect() as connection:
            return _current(connection)
    finally:
        engine.dispose()


def upgrade(url: str) -> tuple[str | None, str]:
    """Migrate to head in one transaction (where the backend allows); (old, new)."""
    engine = engines.create_engine(url)
    try:
        with engines.translate_errors(engine), engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"),
                    {"key": PG_MIGRATION_LOCK},
                )
            old = _current(connection)
            command.upgrade(_config(connection), "head")
            new = _current(connection)
    finally:
        engine.dispose()
    if new is None:
        raise errors.InspectorError(f"upgrade of {engines.describe(url)} left no revision")
    return old, new
