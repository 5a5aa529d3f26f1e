"""`inspector db upgrade|version`: database schema migrations (alembic)."""

from inspector import conf as config
from inspector import store
from inspector.store import schema


def add_parsers(commands) -> None:
    parser = commands.add_parser("db", help="database schema")
    sub = parser.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    sub.add_parser("upgrade", help="migrate the schema to the newest revision").set_defaults(
        run=run_upgrade
    )
    sub.add_parser("version", help="print the schema revision").set_defaults(run=run_version)


def run_upgrade(_args, argv) -> int:
    url = store.database_url(config.load(argv))
    old, new = schema.upgrade(url)
    if old == new:
        print(f"database schema already at {new} (head)")
    else:
        print(f"database schema upgraded from {old or 'empty'} to {new} (head)")
    return 0


def run_version(_args, argv) -> int:
    url = store.database_url(config.load(argv))
    current = schema.current_revision(url)
    head = schema.head_revision()
    if current is None:
        print(f"no schema (run `inspector db upgrade`); head is {head}")
        return 1
    suffix = " (head)" if current == head else f" (head is {head}: upgrade needed)"
    print(current + suffix)
    return 0 if current == head else 1
