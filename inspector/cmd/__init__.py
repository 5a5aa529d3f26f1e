"""The `inspector` command: parses the subcommand, loads configuration, runs the service.

`cmd` is the top layer: it builds everything from the configuration and passes it down.
"""

import argparse
import logging
import sys
from collections.abc import Sequence

from inspector import __version__
from inspector.cmd import config_cmd, db_cmd, service_cmd, status_cmd
from inspector.errors import ConfigError, InspectorError

LOG = logging.getLogger(__name__)

CONFIG_HELP = (
    "oslo.config options: --config-file FILE (repeatable, later files win) and "
    "--config-dir DIR (every *.conf in it, after the files)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inspector",
        description="Highly available bare-metal introspection service (ironic-inspector API v1).",
        epilog=CONFIG_HELP,
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (service_cmd, db_cmd, config_cmd, status_cmd):
        module.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args, rest = _parser().parse_known_args(argv)
    try:
        return int(args.run(args, rest) or 0)
    except ConfigError as exc:
        print(f"inspector: {exc.message}", file=sys.stderr)
        return 2
    except InspectorError as exc:
        LOG.error("%s", exc.message)
        print(f"inspector: {exc.message}", file=sys.stderr)
        return 1
