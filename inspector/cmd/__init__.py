"""The `inspector` command: parses the subcommand, loads configuration, runs the service.

`cmd` is the top layer: it builds everything from the configuration and passes it down.
This module and inspector.cmd.arguments import only the standard library (and
inspector.errors): each command imports what it uses when it runs.
"""

import argparse
import logging
import sys
from collections.abc import Sequence

from inspector import __version__
from inspector.cmd import arguments
from inspector.errors import ConfigError, InspectorError

LOG = logging.getLogger(__name__)

#: oslo.config's own command-line options, each with a value.
CONFIG_OPTIONS = ("--config-file", "--config-dir")


def config_arguments(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the --config-file/--config-dir arguments, the others), each in argv's order.

    oslo.config's options may come before the command (`inspector --config-file F api`)
    as well as after it; all of them reach the configuration, in the order given, so
    that later files still win. Nothing after `--` is taken.
    """
    config: list[str] = []
    others: list[str] = []
    arguments = iter(argv)
    for argument in arguments:
        if argument == "--":
            others.append(argument)
            others.extend(arguments)
            break
        name = argument.partition("=")[0]
        if name not in CONFIG_OPTIONS:
            others.append(argument)
        elif "=" in argument:
            config.append(argument)
        else:
            value = next(arguments, None)
            # Without its value, oslo.config says what is missing.
            config.extend([argument] if value is None else [argument, value])
    return config, others


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inspector",
        description="Highly available bare-metal introspection service (ironic-inspector API v1).",
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    arguments.add_commands(commands)
    _config_help(parser)
    return parser


def _config_help(parser: argparse.ArgumentParser) -> None:
    """--config-file and --config-dir in the help of parser and of each of its commands
    (except those that read no configuration: `reads_config` False). Shown only: they are
    taken out of argv before parsing (config_arguments)."""
    if parser.get_default("reads_config") is False:
        return
    group = parser.add_argument_group("configuration (oslo.config; before or after the command)")
    group.add_argument(
        "--config-file",
        metavar="FILE",
        action="append",
        help="a configuration file (repeatable, later files win); without any, "
        "oslo.config's default ones that exist (/etc/inspector/inspector.conf...)",
    )
    group.add_argument(
        "--config-dir",
        metavar="DIR",
        action="append",
        help="a directory whose *.conf files are read, in name order, after the files "
        "before it (repeatable)",
    )
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                _config_help(command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    config, argv = config_arguments(sys.argv[1:] if argv is None else argv)
    args, rest = _parser().parse_known_args(argv)
    try:
        return int(args.run(args, config + rest) or 0)
    except ConfigError as exc:
        message, status = exc.message, 2
    except InspectorError as exc:
        message, status = exc.message, 1
    # Out of the except block: oslo.log would add the exception's text to the line again.
    if status == 1 and not _logs_to_the_console():
        LOG.error("%s", message)  # a service's log file, journal or syslog keeps it too
    print(f"inspector: {message}", file=sys.stderr)
    return status


def _logs_to_the_console() -> bool:
    """Whether the log goes to standard error or output already (a one-shot command's,
    a service's without a log file, or no set-up yet): the `inspector:` line is enough."""
    handlers = logging.getLogger().handlers
    consoles = (sys.stderr, sys.stdout)
    return not handlers or any(getattr(h, "stream", None) in consoles for h in handlers)
