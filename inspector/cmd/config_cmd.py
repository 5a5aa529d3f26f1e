"""`inspector config sample|check`: print the sample configuration, or validate one."""

import io
import sys

from oslo_config import cfg, generator

from inspector import conf as config
from inspector.api.logs import setup_logging
from inspector.errors import ConfigError


def add_parsers(commands) -> None:
    parser = commands.add_parser("config", help="configuration tools")
    sub = parser.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    sample = sub.add_parser("sample", help="print the sample configuration file")
    sample.set_defaults(run=run_sample)
    check = sub.add_parser(
        "check", help="load and validate the configuration, then exit (0 when valid)"
    )
    check.set_defaults(run=run_check)


def render_sample() -> str:
    """The sample configuration text, generated from every registered option."""
    gen_conf = cfg.ConfigOpts()
    generator.register_cli_opts(gen_conf)
    gen_conf(
        ["--namespace", "inspector", "--namespace", "inspector.libraries", "--wrap-width", "79"],
        default_config_files=[],
    )
    out = io.StringIO()
    generator.generate(gen_conf, output_file=out)
    return out.getvalue()


def run_sample(_args, rest) -> int:
    if rest:
        raise ConfigError(f"unexpected arguments: {' '.join(rest)}")
    sys.stdout.write(render_sample())
    return 0


def run_check(_args, rest) -> int:
    # The logging options too: oslo.log sets up what they say (on standard error).
    setup_logging(config.load(rest), command=True)
    print("configuration is valid")
    return 0
