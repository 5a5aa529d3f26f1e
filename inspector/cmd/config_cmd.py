"""`inspector config sample|check`: print the sample configuration, or validate one (per
service role, with the checks the roles run at start-up: inspector.cmd.roles)."""

import argparse
import contextlib
import io
import logging
import sys
from collections.abc import Iterator

from oslo_config import cfg

from inspector import conf as config
from inspector.api.logs import setup_logging
from inspector.cmd import roles
from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)


def render_sample() -> str:
    """The sample configuration text, generated from every registered option."""
    from oslo_config import generator  # noqa: PLC0415 - for the sample only, not `check`

    gen_conf = cfg.ConfigOpts()
    generator.register_cli_opts(gen_conf)
    gen_conf(
        ["--namespace", "inspector", "--namespace", "inspector.libraries", "--wrap-width", "79"],
        default_config_files=[],
    )
    out = io.StringIO()
    generator.generate(gen_conf, output_file=out)
    return out.getvalue()


def run_sample(_args: argparse.Namespace, rest: list[str]) -> int:
    if rest:
        raise ConfigError(f"unexpected arguments: {' '.join(rest)}")
    sys.stdout.write(render_sample())
    return 0


def run_check(args: argparse.Namespace, rest: list[str]) -> int:
    role = getattr(args, "role", None)
    conf = config.load(rest, conf=roles.build(role or "api"))
    # The logging options too: oslo.log sets up what they say (on standard error).
    setup_logging(conf, command=True)
    with _said_once():  # the roles' checks share their warnings (the embedded SQLite...)
        verdicts = [roles.check(conf, each) for each in ([role] if role else roles.ROLES)]
    for note in verdicts[0].taken:
        print(note)
    for warning in verdicts[0].unread:
        LOG.warning("%s", warning)
    if role:
        if verdicts[0].refused:
            raise ConfigError(verdicts[0].message())
        print(f"configuration is valid for `inspector {role}`")
        return 0
    for verdict in verdicts:
        if verdict.refused:
            print(f"`inspector {verdict.role}` would refuse it:\n  " + _indent(verdict.message()))
    accepted = [f"`inspector {v.role}`" for v in verdicts if not v.refused]
    if not accepted:
        raise ConfigError("no role would start with this configuration (above)")
    print(f"configuration is valid for {', '.join(accepted)}")
    return 0


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


@contextlib.contextmanager
def _said_once() -> Iterator[None]:
    """Within the block, a warning the checks of several roles log alike is logged once
    (by every handler: the first record of each text passes them all)."""
    first: dict[tuple[str, int, str], logging.LogRecord] = {}

    def first_time(record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.getMessage())
        return first.setdefault(key, record) is record

    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(first_time)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(first_time)
