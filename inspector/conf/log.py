"""[DEFAULT] logging options: oslo.log's own, as ironic-inspector had them (debug,
log_file, log_dir, use_stderr, use_journal, use_syslog, use_json, log_config_append,
default_log_levels, logging_context_format_string...), with our defaults.

oslo.log registers them itself (`register`, which imports oslo.log's set-up: only then);
the set-up that reads them is inspector.api.logs. Our defaults are set on the ConfigOpts
given, never on oslo.log's shared option objects; the sample shows them on copies
(`sample_opts`).
"""

import logging

from oslo_config import cfg
from oslo_log import _options as oslo_options

from inspector import redaction

GROUP = "DEFAULT"

#: Libraries that say too much at INFO for a service log: cheroot (every dropped
#: connection), urllib3 (every new connection), alembic (every migration step).
QUIET_LIBRARIES = ["cheroot=WARN", "urllib3=WARN", "alembic.runtime.migration=WARN"]

#: Our defaults of oslo.log's options: its noisy-library levels and ours; a line about
#: a node names it as a node (oslo.log's is "[instance: <uuid>] ").
DEFAULTS = {
    "default_log_levels": [*oslo_options.DEFAULT_LOG_LEVELS, *QUIET_LIBRARIES],
    "instance_uuid_format": "[node %(uuid)s] ",
}


def _library_opts() -> list[cfg.Opt]:
    """Copies of every option oslo.log offers (those it registers, and the deprecation
    options versionutils registers when used)."""
    return [opt for _group, opts in oslo_options.list_opts() for opt in opts]


def register(conf: cfg.ConfigOpts) -> None:
    """oslo.log's options (the command-line ones too: --debug, --log-file...) on conf,
    with our defaults."""
    # oslo.log's set-up (its formatters, oslo.context...): for the commands that log
    # through it, not for those that only read a few options (`register_command_line`).
    from oslo_log import log as oslo_log  # noqa: PLC0415

    root = logging.getLogger()
    bare = not root.handlers
    oslo_log.register_options(conf)
    if bare:
        # oslo.log's stand-in handler (standard error until the set-up): masked as well.
        redaction.install(root)
    for name, value in DEFAULTS.items():
        conf.set_default(name, value)


def register_command_line(conf: cfg.ConfigOpts) -> None:
    """oslo.log's command-line options alone (--debug, --log-file...), with their values
    in the files: what a command that logs to standard error by itself accepts, as every
    command does."""
    conf.register_cli_opts(oslo_options.common_cli_opts)
    conf.register_cli_opts(oslo_options.logging_cli_opts)


def registered(conf: cfg.ConfigOpts) -> list[cfg.Opt]:
    """The logging options conf has (for the start-up validation)."""
    return [opt for opt in _library_opts() if opt.dest in conf]


def sample_opts() -> list[cfg.Opt]:
    """oslo.log's options with our defaults, for the sample configuration."""
    opts = _library_opts()
    for opt in opts:
        if opt.dest in DEFAULTS:
            opt.default = DEFAULTS[opt.dest]
    return opts
