"""Whether keystonemiddleware could validate tokens with the configuration: the keystone
strategy's start-up check, which `inspector config check` runs too. Imports neither Flask
nor keystonemiddleware for a configuration it refuses on its auth_type alone (the check
that runs before every `inspector api`); keystoneauth loads a plugin that is set."""

from oslo_config import cfg

from inspector import redaction
from inspector.conf import keystoneauth

#: keystonemiddleware's section, and what it needs there to validate tokens.
KEYSTONE_GROUP = "keystone_authtoken"
KEYSTONE_NEEDS = (
    "keystonemiddleware validates tokens as a service user of Keystone: set auth_type = "
    "password, auth_url, username, password, user_domain_name, project_name, "
    "project_domain_name (and www_authenticate_uri, the public Keystone URL)"
)
#: keystoneauth plugins that send no Keystone credentials.
NO_CREDENTIALS = ("none", "http_basic")


def keystone_problems(conf: cfg.ConfigOpts) -> list[str]:
    """Why keystonemiddleware's auth_token could not validate a token with conf's
    [keystone_authtoken] (or the section its auth_section names), each naming what to set;
    empty when it could. It validates tokens as a service user of Keystone: an auth
    plugin (auth_type) that sends credentials, with the options the plugin requires.
    Start-up (inspector.cmd.roles) and the API's set-up (inspector.api.auth) ask this."""
    # auth_section and auth_type as keystoneauth registers them (declared alike).
    keystoneauth.register_auth(conf, KEYSTONE_GROUP)
    section = conf[KEYSTONE_GROUP].auth_section or KEYSTONE_GROUP
    name = conf[section].auth_type
    refused = f"[DEFAULT] auth_strategy = keystone, but [{section}] auth_type"
    if not name:
        return [f"{refused} is not set: {KEYSTONE_NEEDS}"]
    if name in NO_CREDENTIALS:
        return [f"{refused} = {name} sends no credentials to Keystone: {KEYSTONE_NEEDS}"]
    return _plugin_problems(conf, refused, name)


def _plugin_problems(conf: cfg.ConfigOpts, refused: str, name: str) -> list[str]:
    """What keystoneauth says of the plugin `name` with conf's options."""
    # Imported here: keystonemiddleware pulls in WebOb, oslo.cache and friends.
    from keystoneauth1 import exceptions as ksa_exceptions  # noqa: PLC0415
    from keystoneauth1 import loading  # noqa: PLC0415
    from keystonemiddleware import auth_token  # noqa: PLC0415

    for group, opts in auth_token.list_opts():  # as auth_token registers them on conf
        conf.register_opts(opts, group=group)
    try:
        loading.load_auth_from_conf_options(conf, KEYSTONE_GROUP)
    except ksa_exceptions.MissingRequiredOptions as exc:
        return [f"{refused} = {name} needs {', '.join(o.dest for o in exc.options)}"]
    except ksa_exceptions.NoMatchingPlugin:
        return [f"{refused} = {name}: no such plugin; {KEYSTONE_NEEDS}"]
    except (ksa_exceptions.ClientException, cfg.Error, TypeError, ValueError) as exc:
        return [f"{refused} = {name}: {redaction.shorten(str(exc))}"]
    return []
