"""Configuration: builds and validates a ConfigOpts from the option groups (one module each).

There is no global CONF: `load` returns a new ConfigOpts that the caller passes on.
"""

import contextlib
import io
import logging
import re
import sys
from collections.abc import Sequence
from types import ModuleType

from oslo_config import cfg

from inspector import __version__
from inspector.conf import (
    accelerators,
    api,
    capabilities,
    clean_up,
    compat,
    coordination,
    database,
    default,
    discovery,
    dnsmasq_pxe_filter,
    firewall,
    http_basic,
    iptables,
    ironic,
    ironic_history,
    limits,
    log,
    metrics,
    notifications,
    oslo_messaging_rabbit,
    oslo_middleware,
    pci_devices,
    port_physnet,
    processing,
    pxe_filter,
    queue,
    worker,
)
from inspector.conf.validate import validate
from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)

#: Every option group, in the order of the sample configuration.
GROUPS = (
    default,
    accelerators,
    api,
    capabilities,
    clean_up,
    coordination,
    database,
    discovery,
    dnsmasq_pxe_filter,
    firewall,
    http_basic,
    ironic,
    ironic_history,
    iptables,
    limits,
    metrics,
    notifications,
    oslo_middleware,
    oslo_messaging_rabbit,
    pci_devices,
    port_physnet,
    processing,
    pxe_filter,
    queue,
    worker,
)

__all__ = ["GROUPS", "build", "known_options", "list_opts", "load", "load_groups", "registered"]


def build() -> cfg.ConfigOpts:
    """A new ConfigOpts with every option registered and nothing parsed."""
    conf = cfg.ConfigOpts()
    # oslo.log's [DEFAULT] options first: debug and log_file are among them.
    log.register(conf)
    for module in GROUPS:
        register = getattr(module, "register", None)
        if register is not None:
            register(conf)
        elif module.GROUP == "DEFAULT":
            conf.register_opts(module.OPTS)
        else:
            conf.register_opts(module.OPTS, group=module.GROUP)
    # ironic-inspector's options that decide the mapping (not in the sample).
    compat.register(conf)
    return conf


def registered(conf: cfg.ConfigOpts) -> list[tuple[str, list[cfg.Opt]]]:
    """Every option group as registered by `build`: ours, oslo.log's and the few of
    ironic-inspector's that inspector.conf.compat reads."""
    return [
        *((m.GROUP, list(m.OPTS)) for m in GROUPS),
        (log.GROUP, log.registered(conf)),
        (compat.GROUP, list(compat.OPTS)),
    ]


def known_options(conf: cfg.ConfigOpts) -> compat.Known:
    """Every name (old names too) of the registered options, to the option's own."""
    return compat.known_options(registered(conf))


def load(
    argv: Sequence[str] = (),
    *,
    conf: cfg.ConfigOpts | None = None,
    default_config_files: Sequence[str] | None = None,
) -> cfg.ConfigOpts:
    """Parse --config-file/--config-dir arguments and validate every option.

    Raises ConfigError with a message naming the option on any invalid value.
    """
    conf = conf if conf is not None else build()
    _read(conf, argv, default_config_files)
    validate(conf, registered(conf))
    # ironic-inspector's [DEFAULT] transport_url as our queue, where it is meant so.
    compat.apply(conf)
    return conf


def load_groups(
    argv: Sequence[str],
    modules: Sequence[ModuleType],
    *,
    default_config_files: Sequence[str] | None = None,
) -> cfg.ConfigOpts:
    """Only the option groups of `modules` (of this package) and oslo.log's command-line
    options (--debug...), read from the same files and arguments as `load` and validated
    alike: for a command that reads a few options and must start fast (`inspector
    firewall close`). Another group's value, even an invalid one, is not read."""
    conf = cfg.ConfigOpts()
    log.register_command_line(conf)
    for module in modules:
        conf.register_opts(module.OPTS, group=None if module.GROUP == "DEFAULT" else module.GROUP)
    _read(conf, argv, default_config_files)
    validate(conf, [(module.GROUP, list(module.OPTS)) for module in modules])
    return conf


def _read(
    conf: cfg.ConfigOpts, argv: Sequence[str], default_config_files: Sequence[str] | None
) -> None:
    """Parse the files and arguments into conf; their errors as a ConfigError."""
    try:
        _parse(conf, argv, default_config_files)
    except cfg.ConfigFilesNotFoundError as exc:
        raise ConfigError(f"configuration file not found: {', '.join(exc.config_files)}") from exc
    except cfg.ConfigDirNotFoundError as exc:
        raise ConfigError(f"configuration directory not found: {exc.config_dir}") from exc
    except cfg.ConfigFileParseError as exc:
        raise ConfigError(f"cannot parse {exc.config_file}: {exc.msg}") from exc
    except cfg.Error as exc:
        raise ConfigError(str(exc)) from exc


#: What oslo.config writes to standard error, before it exits, about a file's value of
#: an option it also takes on the command line (oslo.log's: debug, log_file, use_json...).
_CLI_OPTION_VALUE = re.compile(
    r"argument --(?P<name>[\w-]+): Invalid (?P<kind>.+?) value: (?P<value>.*)"
)


def _parse(
    conf: cfg.ConfigOpts, argv: Sequence[str], default_config_files: Sequence[str] | None
) -> None:
    """conf(argv), a bad value of a command-line option in a file being a ConfigError
    like any other's, not oslo.config's message and exit."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            conf(
                list(argv),
                project="inspector",
                version=__version__,
                default_config_files=(
                    None if default_config_files is None else list(default_config_files)
                ),
                default_config_dirs=[],
            )
    except SystemExit:
        bad = _CLI_OPTION_VALUE.search(said.getvalue())
        if bad is None:
            sys.stderr.write(said.getvalue())
            raise
        raise ConfigError(
            f"invalid configuration:\n  [DEFAULT] {bad['name']}: {bad['value'].strip()!r} is not "
            f"a valid {bad['kind'].lower()} value"
        ) from None
    except BaseException:
        sys.stderr.write(said.getvalue())
        raise
    sys.stderr.write(said.getvalue())


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Entry point of the oslo.config.opts namespace `inspector` (sample generator)."""
    result = []
    for module in GROUPS:
        sample = getattr(module, "sample_opts", None)
        result.append((module.GROUP, sample() if sample else list(module.OPTS)))
    return result


def library_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Options the libraries register themselves: oslo.log's [DEFAULT] logging options,
    keystonemiddleware's [keystone_authtoken] and oslo.policy's [oslo_policy] (for the
    sample configuration)."""
    from keystonemiddleware import auth_token  # noqa: PLC0415 - only for the sample
    from oslo_policy import opts as policy_opts  # noqa: PLC0415

    return (
        [(log.GROUP, log.sample_opts())]
        + [(group, list(opts)) for group, opts in auth_token.list_opts()]
        + [(group, list(opts)) for group, opts in policy_opts.list_opts()]
    )
