"""[http_basic] options: how users of the htpasswd file map to policy roles.

The file itself is [DEFAULT] http_basic_auth_user_file, ironic-inspector's name.
"""

from oslo_config import cfg

GROUP = "http_basic"

OPTS = [
    cfg.ListOpt(
        "default_roles",
        default=["admin"],
        help="Roles of an htpasswd user whose line has no third field (user:hash:role1,role2). "
        "The default, admin, keeps ironic-inspector's behaviour, where any user could do "
        "anything; a warning is logged at start-up for each such user. Set it to reader, or "
        "give every line its roles, to grant less.",
    ),
]


def register(conf: cfg.ConfigOpts) -> None:
    """Idempotent: the API calls it too, so it works before the group is listed everywhere."""
    conf.register_opts(OPTS, group=GROUP)
