"""Schema migrations (alembic, configured in code): upgrade, current and head revision,
and the expand / contract phases of a rolling upgrade.

Runs the scripts in `migrations/`; it never creates tables from the models directly.
Each revision says its `phase`: "expand" (adds; the code before it runs unchanged on
it) or "contract" (removes what older code still used: applied only once every process
runs the new code). A process starts on a schema that has every expand revision it
knows, whatever contract revisions are still pending, or on a newer schema it does not
know (written by a newer release during a rolling upgrade).
"""

import logging
import pathlib

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import exc, text
from sqlalchemy.engine import Connection

from inspector import errors
from inspector.store import engine as engines

LOG = logging.getLogger(__name__)

#: The alembic scripts, shipped as package data.
MIGRATIONS = pathlib.Path(__file__).parent / "migrations"
#: pg_advisory_xact_lock key: concurrent `inspector db upgrade` run one at a time.
PG_MIGRATION_LOCK = 0x1A5BEC70
#: MySQL's and MariaDB's named lock (GET_LOCK, one per server) for the same: held by the
#: session, so until the upgrade's connection is closed.
MYSQL_MIGRATION_LOCK = "inspector-db-upgrade"
#: Seconds an upgrade waits for that lock: a year, as PostgreSQL's waits without end
#: (MariaDB refuses MySQL's -1).
MYSQL_MIGRATION_LOCK_TIMEOUT = 365 * 24 * 3600
#: MySQL's ER_NOT_SUPPORTED_YET: MariaDB's answer to GET_LOCK in a Galera cluster.
MYSQL_NOT_SUPPORTED = 1235

#: A migration may rewrite a large table, and waits for another upgrade's lock: no
#: statement or lock timeout (the connection's bounds stay).
MIGRATION_BOUNDS = engines.Bounds().unlimited_statements()
EXPAND = "expand"
CONTRACT = "contract"


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


def chain() -> list[tuple[str, str]]:
    """Every shipped revision, oldest first, with its phase."""
    scripts = ScriptDirectory.from_config(_config())
    revisions = list(scripts.walk_revisions())  # newest first
    return [
        (script.revision, getattr(script.module, "phase", EXPAND)) for script in reversed(revisions)
    ]


def pending(
    current: str | None, revisions: list[tuple[str, str]] | None = None
) -> list[tuple[str, str]] | None:
    """The revisions after `current`, with their phases; None when `current` is not one
    of ours (a newer release wrote it)."""
    revisions = chain() if revisions is None else revisions
    names = [name for name, _phase in revisions]
    if current is None:
        return list(revisions)
    if current not in names:
        return None
    return revisions[names.index(current) + 1 :]


def compatibility(current: str | None, revisions: list[tuple[str, str]] | None = None) -> str:
    """ "ok", "newer" (a schema from a newer release), or the reason this code cannot
    run on the schema yet."""
    left = pending(current, revisions)
    if left is None:
        return "newer"
    expands = [name for name, phase in left if phase == EXPAND]
    if not expands:
        return "ok"
    return (
        f"the database schema is at {current or 'nothing'} and lacks {', '.join(expands)}: "
        "run `inspector db upgrade --expand` (or `inspector db upgrade`) first"
    )


def target(
    current: str | None, phase: str | None, revisions: list[tuple[str, str]] | None = None
) -> str:
    """The revision an upgrade of `phase` stops at."""
    left = pending(current, revisions) or []
    if phase != EXPAND:
        return "head"
    stop_at = current
    for name, revision_phase in left:
        if revision_phase == CONTRACT:
            break
        stop_at = name
    return stop_at or "base"


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def current_revision(url: str) -> str | None:
    """The database's revision; None when it has no schema yet."""
    engine = engines.create_engine(url, bounds=MIGRATION_BOUNDS)
    try:
        with engines.translate_errors(engine), engine.connect() as connection:
            return _current(connection)
    finally:
        engine.dispose()


def upgrade(url: str, phase: str | None = None) -> tuple[str | None, str]:
    """Migrate in one transaction (where the backend allows); (old, new). `phase`
    EXPAND stops before the first pending contract revision; None or CONTRACT go to
    head."""
    engine = engines.create_engine(url, bounds=MIGRATION_BOUNDS)
    try:
        with engines.translate_errors(engine), engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"),
                    {"key": PG_MIGRATION_LOCK},
                )
            elif connection.dialect.name in engines.MYSQL_DIALECTS:
                _lock_mysql(connection)
            old = _current(connection)
            stop = target(old, phase)
            if stop != old:
                command.upgrade(_config(connection), stop)
            new = _current(connection)
    finally:
        engine.dispose()  # closes the connection: MySQL's named lock goes with it
    if new is None:
        raise errors.InspectorError(f"upgrade of {engines.describe(url)} left no revision")
    return old, new


def _lock_mysql(connection: Connection) -> None:
    """Wait for MYSQL_MIGRATION_LOCK. MySQL commits each DDL statement on its own: two
    upgrades at once would both create the tables, and fail half-way. A Galera cluster
    has no named locks: the upgrade goes on without (as before there was one)."""
    try:
        got = connection.execute(
            text("SELECT GET_LOCK(:name, :timeout)"),
            {"name": MYSQL_MIGRATION_LOCK, "timeout": MYSQL_MIGRATION_LOCK_TIMEOUT},
        ).scalar()
    except exc.DBAPIError as error:
        if getattr(error.orig, "args", (None,))[:1] != (MYSQL_NOT_SUPPORTED,):
            raise
        LOG.warning(
            "The database has no named locks (a Galera cluster?): concurrent "
            "`inspector db upgrade` runs are not kept apart, run one at a time (%s)",
            error.orig,
        )
        return
    if got != 1:
        raise errors.InspectorError(
            f"could not take the lock {MYSQL_MIGRATION_LOCK!r} for the upgrade (GET_LOCK: {got})"
        )
