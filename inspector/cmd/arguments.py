"""The command line of `inspector`: every command, its arguments and help, and the module
whose function runs it. Imports nothing but the standard library: a command's module
(and the libraries it needs) is imported only when that command runs, so that
`--version` and `--help` import no library and `inspector firewall close` only what
closing needs.
"""

import argparse
import importlib
from collections.abc import Callable
from typing import TypeAlias

#: The service roles, each a command (inspector.conf.compat.ROLES, a test says so).
ROLES = ("api", "worker", "all")
#: Seconds `inspector status` waits for the workers' answers unless told otherwise.
DEFAULT_WAIT = 2.0
#: The phases of `inspector db upgrade` (inspector.store.schema.EXPAND and CONTRACT).
EXPAND, CONTRACT = "expand", "contract"

Run = Callable[[argparse.Namespace, list[str]], int | None]
#: The subparsers of the `inspector` parser, each command one of them.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def runs(module: str, function: str) -> Run:
    """The command's function `function` of inspector.cmd.`module`, imported when the
    command runs (looked up then: a test may replace it)."""

    def run(args: argparse.Namespace, argv: list[str]) -> int | None:
        return getattr(importlib.import_module(f"inspector.cmd.{module}"), function)(args, argv)

    run.__qualname__ = f"{module}.{function}"
    return run


def add_commands(commands: Commands) -> None:
    """Every command, on the subparsers `commands` of the `inspector` parser."""
    for add in (
        _services,
        _pxe_filter,
        _db,
        _config,
        _status,
        _history,
        _firewall,
        _rules,
        _report,
    ):
        add(commands)


def _services(commands: Commands) -> None:
    api = commands.add_parser("api", help="serve the HTTP API")
    api.set_defaults(run=runs("service_cmd", "run_api"))
    worker = commands.add_parser(
        "worker", help="run a pool of workers taking transition requests from the queue"
    )
    worker.set_defaults(run=runs("service_cmd", "run_worker"))
    everything = commands.add_parser(
        "all",
        help="API and workers in one process on embedded defaults (SQLite, "
        "in-process queue and locks, noauth): the first thing to run",
    )
    everything.set_defaults(run=runs("service_cmd", "run_all"))


def _pxe_filter(commands: Commands) -> None:
    parser = commands.add_parser(
        "pxe-filter",
        help="run only the HA PXE filter (the firewall and its leader election) on a PXE "
        "host; with [pxe_filter] whitelist_source = ironic, in place of Ironic's "
        "ironic-pxe-filter",
    )
    parser.set_defaults(run=runs("pxe_filter_cmd", "run"))


def _db(commands: Commands) -> None:
    parser = commands.add_parser("db", help="database schema")
    sub = parser.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    upgrade = sub.add_parser(
        "upgrade",
        help="migrate the schema to the newest revision (both phases), or one phase of a "
        "rolling upgrade",
    )
    phases = upgrade.add_mutually_exclusive_group()
    phases.add_argument(
        "--expand",
        dest="phase",
        action="store_const",
        const=EXPAND,
        help="only the revisions that may run before the new code starts (stops before "
        "the first contract revision)",
    )
    phases.add_argument(
        "--contract",
        dest="phase",
        action="store_const",
        const=CONTRACT,
        help="everything left, once every process runs the new code",
    )
    upgrade.set_defaults(run=runs("db_cmd", "run_upgrade"), phase=None)
    version = sub.add_parser("version", help="print the schema revision")
    version.set_defaults(run=runs("db_cmd", "run_version"))
    imports = sub.add_parser(
        "import-ironic-inspector",
        help="copy node statuses, lookup attributes, stored introspection data and rules "
        "from an ironic-inspector database (idempotent)",
    )
    imports.add_argument(
        "--source-connection",
        required=True,
        metavar="URL",
        help="the ironic-inspector database: its [database]connection URL; read only",
    )
    imports.add_argument(
        "--dry-run", action="store_true", help="print what would be done; write nothing"
    )
    imports.set_defaults(run=runs("db_cmd", "run_import"))


def _config(commands: Commands) -> None:
    parser = commands.add_parser("config", help="configuration tools")
    sub = parser.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    sample = sub.add_parser("sample", help="print the sample configuration file")
    sample.set_defaults(run=runs("config_cmd", "run_sample"), reads_config=False)
    check = sub.add_parser(
        "check",
        help="load and validate the configuration, and check it as `inspector ROLE` does "
        "at start-up, then exit (0 when that role would start)",
    )
    check.add_argument(
        "--role",
        choices=ROLES,
        help="the service role to check for; without it every role is checked and "
        "reported, and the exit status is 0 when at least one of them would start",
    )
    check.set_defaults(run=runs("config_cmd", "run_check"))


def _status(commands: Commands) -> None:
    status = commands.add_parser(
        "status",
        help="the cluster at a glance: database, queue, nodes per state, singleton groups "
        "and leaders, periodic tasks, notifications, every worker's PXE firewall; the exit "
        "status ORs the collectors' codes (0 ok, 1 being fixed, 2 unknown, 4 operator)",
    )
    status.add_argument(
        "--json",
        action="store_true",
        help="print the report of every collector as JSON (Ganeti monitoring format)",
    )
    status.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT,
        help=f"seconds to wait for the workers' answers (default {DEFAULT_WAIT:g})",
    )
    status.set_defaults(run=runs("status_cmd", "run_status"))


def _history(commands: Commands) -> None:
    history = commands.add_parser(
        "history",
        help="a node's past introspections, newest first (id, state, start, end, error)",
    )
    history.add_argument("node", metavar="NODE", help="the node's UUID or Ironic name")
    history.add_argument("--json", action="store_true", help="print them as JSON")
    history.set_defaults(run=runs("history_cmd", "run_history"))
    drift = commands.add_parser(
        "drift",
        help="what changed in a node's hardware between two introspections (by default "
        "the last two finished): a change a line, old -> new",
    )
    drift.add_argument("node", metavar="NODE", help="the node's UUID or Ironic name")
    drift.add_argument("--from", dest="from_id", type=int, metavar="ID", help="the older one")
    drift.add_argument("--to", dest="to_id", type=int, metavar="ID", help="the newer one")
    drift.add_argument("--json", action="store_true", help="print the drift as JSON")
    drift.set_defaults(run=runs("history_cmd", "run_drift"))


def _firewall(commands: Commands) -> None:
    firewall = commands.add_parser("firewall", help="act on this host's PXE firewall")
    actions = firewall.add_subparsers(dest="action", required=True, metavar="ACTION")
    close = actions.add_parser(
        "close",
        help="close this host's PXE service now (e.g. ExecStopPost of the worker's unit)",
    )
    close.set_defaults(run=runs("firewall_cmd", "run_close"))


def _rules(commands: Commands) -> None:
    rules = commands.add_parser("rules", help="introspection rules")
    actions = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="evaluate the rules of FILE against nodes' stored processed data and their "
        "Ironic nodes, applying nothing: which match and why, what they would do",
    )
    check.add_argument(
        "file",
        metavar="FILE",
        help='a rule as POST /v1/rules takes it, a list, or {"rules": [...]}',
    )
    check.add_argument(
        "--node",
        required=True,
        action="append",
        metavar="NODE",
        help="a node UUID or name (repeatable, up to [api] max_rules_check_nodes)",
    )
    check.add_argument("--json", action="store_true", help="print the check as JSON")
    check.set_defaults(run=runs("rules_cmd", "run_check"))


#: The categories of `inspector report --by` (inspector.processing.hardware_report).
REPORT_CATEGORIES = ("system", "firmware", "cpu", "memory", "disks", "nics", "pci")


def _report(commands: Commands) -> None:
    report = commands.add_parser(
        "report",
        help="the fleet hardware report: every node's stored processed data grouped by a "
        "category, with how many nodes of each group changed at their last introspection",
    )
    report.add_argument(
        "--by", choices=REPORT_CATEGORIES, default="system", help="the category (default system)"
    )
    report.add_argument("--nodes", action="store_true", help="list each group's nodes")
    formats = report.add_mutually_exclusive_group()
    formats.add_argument("--json", action="store_true", help="print the report as JSON")
    formats.add_argument("--csv", action="store_true", help="print the report as CSV")
    report.add_argument(
        "--plot", metavar="FILE.png", help="also draw a bar chart per group (needs matplotlib)"
    )
    report.set_defaults(run=runs("report_cmd", "run_report"))
