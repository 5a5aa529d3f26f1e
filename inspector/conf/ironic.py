"""[ironic] options: keystoneauth session/adapter/auth options and the Ironic retry policy.

keystoneauth (and requests under it) is imported when its options are registered, not
with this module: a command that reads other groups only does not pay for it.
"""

from oslo_config import cfg

GROUP = "ironic"

OPTS = [
    cfg.IntOpt(
        "max_retries",
        default=30,
        min=0,
        help="Attempts of an Ironic call that failed to connect, answered 5xx or "
        "409 NodeLocked, before the call fails.",
    ),
    cfg.FloatOpt(
        "retry_interval",
        default=2.0,
        min=0.001,
        help="Seconds between two attempts of an Ironic call. After 409 NodeLocked the "
        "first retry comes after 0.1 s and the wait doubles up to this interval.",
    ),
    cfg.IntOpt(
        "max_concurrent_calls",
        default=0,
        min=0,
        help="Ironic requests one process (an API or a worker process) has in flight at "
        "most; its other threads wait their turn (a shutdown ends the wait). 0: no limit "
        "but the threads. Ironic answers more slowly, not more, past what its API "
        "processes, conductors and database take: size processes x this to that "
        "(docs/deployment.md).",
    ),
]


def register(conf: cfg.ConfigOpts) -> None:
    from keystoneauth1 import loading  # noqa: PLC0415

    conf.register_opts(OPTS, group=GROUP)
    loading.register_session_conf_options(conf, GROUP)
    loading.register_auth_conf_options(conf, GROUP)
    loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default("service_type", "baremetal", group=GROUP)


def sample_opts() -> list[cfg.Opt]:
    """Our options plus keystoneauth's, with the password plugin's as an example."""
    from keystoneauth1 import loading  # noqa: PLC0415

    opts = list(OPTS)
    opts += loading.get_session_conf_options()
    opts += loading.get_auth_common_conf_options()
    opts += loading.get_auth_plugin_conf_options("password")
    opts += loading.get_adapter_conf_options(include_deprecated=False)
    seen: set[str] = set()
    unique = []
    for opt in opts:
        if opt.dest not in seen:
            seen.add(opt.dest)
            unique.append(opt)
    return list(OPTS) + sorted(unique[len(OPTS) :], key=lambda o: o.name)
