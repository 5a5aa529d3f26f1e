"""[ironic] options: keystoneauth session/adapter/auth options, the Ironic retry policy
and how power actions are confirmed.

keystoneauth's options are registered from their declaration in inspector.conf.keystoneauth
(equal to the library's): keystoneauth itself (and requests under it) is imported for the
sample configuration only, and by the Ironic client that loads a session from them.
"""

from oslo_config import cfg

from inspector.conf import keystoneauth

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
    cfg.FloatOpt(
        "power_confirm_timeout",
        default=30.0,
        min=0.0,
        help="Seconds Ironic gets to finish a power action it accepted (the power-on or "
        "reboot that boots the ramdisk, the final power-off) before the introspection "
        "gives up on it: the node goes to error (a final power-off: the failure is "
        "recorded, the introspection stays finished). The worker checks the node's "
        "power fields meanwhile without a thread waiting (the check goes back to the "
        "queue with the worker's back-off, at most 2 s apart). Counted from each "
        "request to Ironic, and again from the last check Ironic did not answer at all "
        "(a restarted Ironic shows the action it is about to clear for a moment). Ironic "
        "itself fails an action after its [conductor] power_state_change_timeout (60 s "
        "by default): raise this above the time the slowest BMCs take. 0: power actions "
        "are not confirmed (a lost one ends at [DEFAULT] timeout).",
    ),
    cfg.IntOpt(
        "power_attempts",
        default=3,
        min=1,
        max=9,
        help="Requests for one power action at most, the first included: an action "
        "Ironic dropped without an error (its conductor restarted, or another one took "
        "the node over, while it ran) is asked again, through the reboot throttle, until "
        "this many were made; then the introspection gives up as for a failed action.",
    ),
]


def register(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS, group=GROUP)
    keystoneauth.register(conf, GROUP)
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
