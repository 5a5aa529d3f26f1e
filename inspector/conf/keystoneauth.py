"""keystoneauth's session, adapter and common auth options ([ironic], and the auth options
of [keystone_authtoken]) declared here, equal to those of the keystoneauth release
DECLARED_FOR: with that release installed, registering them does not import keystoneauth
(and requests under it), which a command that only reads or checks the configuration
need not pay for (0.1 s of CPU). With any other release (OpenStack's pins of a series,
a newer one) keystoneauth's own functions register them, so that the options are always
the installed library's: keystoneauth registers them again when it loads a session, and
two different declarations of one option are an error. tests/unit/test_keystoneauth_opts.py
compares each list with keystoneauth's, option by option (oslo.config's equality: every
attribute), on the release they are declared for.
"""

import functools
import importlib.metadata

from oslo_config import cfg, types

#: The keystoneauth1 release the lists below are copied from.
DECLARED_FOR = "5.18.1"


@functools.cache
def declared() -> bool:
    """Whether the installed keystoneauth1 is DECLARED_FOR (its metadata: a few ms)."""
    try:
        return importlib.metadata.version("keystoneauth1") == DECLARED_FOR
    except importlib.metadata.PackageNotFoundError:
        return False


#: keystoneauth1.loading.get_session_conf_options()
SESSION = [
    cfg.StrOpt(
        "cafile",
        help="PEM encoded Certificate Authority to use when verifying HTTPs connections.",
    ),
    cfg.StrOpt(
        "certfile",
        help="PEM encoded client certificate cert file",
    ),
    cfg.StrOpt(
        "keyfile",
        help="PEM encoded client certificate key file",
    ),
    cfg.BoolOpt(
        "insecure",
        default=False,
        help="Verify HTTPS connections.",
    ),
    cfg.FloatOpt(
        "timeout",
        help="Timeout value for http requests",
    ),
    cfg.BoolOpt(
        "collect-timing",
        default=False,
        help="Collect per-API call timing information.",
    ),
    cfg.BoolOpt(
        "split-loggers",
        default=False,
        help="Log requests to multiple loggers.",
    ),
    cfg.StrOpt(
        "tls-ciphers",
        help=(
            "An OpenSSL cipher string to set the allowed ciphers for TLS connections. If not "
            "specified, the default ciphers from the underlying OpenSSL library are used."
        ),
    ),
    cfg.StrOpt(
        "tls-min-version",
        choices=[None, "1.2", "1.3"],
        help=(
            "The minimum TLS version to require for TLS connections. When not specified, the "
            "behavior is undefined and defers to the system cryptographic policy."
        ),
    ),
]

#: keystoneauth1.loading.get_auth_common_conf_options(): auth_type, auth_section.
AUTH = [
    cfg.Opt(
        "auth_type",
        type=str,  # type: ignore[arg-type]  # as keystoneauth declares it
        help="Authentication type to load",
        deprecated_opts=[cfg.DeprecatedOpt("auth_plugin", group=None)],
    ),
    cfg.Opt(
        "auth_section",
        type=str,  # type: ignore[arg-type]  # as keystoneauth declares it
        help="Config Section from which to load plugin specific options",
    ),
]

#: keystoneauth1.loading.get_adapter_conf_options() (the deprecated `interface` included).
ADAPTER = [
    cfg.StrOpt(
        "service-type",
        help="The default service_type for endpoint URL discovery.",
    ),
    cfg.StrOpt(
        "service-name",
        help="The default service_name for endpoint URL discovery.",
    ),
    cfg.ListOpt(
        "valid-interfaces",
        help="List of interfaces, in order of preference, for endpoint URL.",
    ),
    cfg.StrOpt(
        "region-name",
        help="The default region_name for endpoint URL discovery.",
    ),
    cfg.StrOpt(
        "endpoint-override",
        help=(
            "Always use this endpoint URL for requests for this client. NOTE: The unversioned"
            " endpoint should be specified here; to request a particular API version, use the"
            " `version`, `min-version`, and/or `max-version` options."
        ),
    ),
    cfg.StrOpt(
        "version",
        help=(
            "Minimum Major API version within a given Major API version for endpoint URL "
            "discovery. Mutually exclusive with min_version and max_version"
        ),
    ),
    cfg.StrOpt(
        "min-version",
        help=(
            "The minimum major version of a given API, intended to be used as the lower bound"
            " of a range with max_version. Mutually exclusive with version. If min_version is"
            ' given with no max_version it is as if max version is "latest".'
        ),
    ),
    cfg.StrOpt(
        "max-version",
        help=(
            "The maximum major version of a given API, intended to be used as the upper bound"
            " of a range with min_version. Mutually exclusive with version."
        ),
    ),
    cfg.IntOpt(
        "connect-retries",
        help="The maximum number of retries that should be attempted for connection errors.",
    ),
    cfg.FloatOpt(
        "connect-retry-delay",
        help=(
            "Delay (in seconds) between two retries for connection errors. If not set, "
            "exponential retry starting with 0.5 seconds up to a maximum of 60 seconds is "
            "used."
        ),
    ),
    cfg.IntOpt(
        "status-code-retries",
        help=(
            "The maximum number of retries that should be attempted for retriable HTTP status"
            " codes."
        ),
    ),
    cfg.FloatOpt(
        "status-code-retry-delay",
        help=(
            "Delay (in seconds) between two retries for retriable status codes. If not set, "
            "exponential retry starting with 0.5 seconds up to a maximum of 60 seconds is "
            "used."
        ),
    ),
    cfg.ListOpt(
        "retriable-status-codes",
        item_type=types.Integer(),
        help=(
            "List of retriable HTTP status codes that should be retried. If not set default "
            "to `[503]`"
        ),
    ),
    cfg.StrOpt(
        "interface",
        help="The default interface for endpoint URL discovery.",
        deprecated_for_removal=True,
        deprecated_reason=(
            "Using valid-interfaces is preferable because it is capable of accepting a list "
            "of possible interfaces."
        ),
    ),
]


def register(conf: cfg.ConfigOpts, group: str) -> None:
    """As keystoneauth's register_session_conf_options, register_auth_conf_options and
    register_adapter_conf_options do, in that order (by them, with another release)."""
    if not declared():
        from keystoneauth1 import loading  # noqa: PLC0415  (another release: its own)

        loading.register_session_conf_options(conf, group)
        loading.register_auth_conf_options(conf, group)
        loading.register_adapter_conf_options(conf, group)
        return
    conf.register_opts(SESSION, group=group)
    register_auth(conf, group)
    conf.register_opts(ADAPTER, group=group)


def register_auth(conf: cfg.ConfigOpts, group: str) -> None:
    """As keystoneauth's register_auth_conf_options: auth_section in group, auth_type in
    the section auth_section names (group itself when it names none)."""
    if not declared():
        from keystoneauth1 import loading  # noqa: PLC0415  (another release: its own)

        loading.register_auth_conf_options(conf, group)
        return
    auth_type, section = AUTH
    conf.register_opt(section, group=group)
    conf.register_opt(auth_type, group=conf[group].auth_section or group)
