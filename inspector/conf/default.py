"""[DEFAULT] options: the service's address, auth, and the ironic-inspector top-level names
(the logging ones are oslo.log's: inspector.conf.log)."""

import os
import socket

from oslo_config import cfg

GROUP = "DEFAULT"

#: The design's bound for the introspection time-out; larger values only warn.
DESIGN_MAX_TIMEOUT = 900


def _default_state_path() -> str:
    if os.geteuid() == 0:
        return "/var/lib/inspector"
    base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return os.path.join(base, "inspector")


OPTS = [
    cfg.StrOpt(
        "listen_address",
        default="127.0.0.1",
        help="IP address the API listens on. ironic-inspector listened on '::' by "
        "default; we default to loopback so that a first start exposes nothing.",
    ),
    cfg.PortOpt("listen_port", default=5050, help="Port the API listens on."),
    cfg.StrOpt(
        "host",
        default=socket.gethostname(),
        sample_default="localhost",
        help="Name of this host, used in logs, group membership and leader election.",
    ),
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[
            ("noauth", "no authentication: every caller is an administrator"),
            ("keystone", "Keystone tokens through keystonemiddleware"),
            ("http_basic", "HTTP basic authentication against an htpasswd file"),
        ],
        help="Authentication method of the API. `inspector all` defaults to noauth.",
    ),
    cfg.StrOpt(
        "http_basic_auth_user_file",
        default="/etc/inspector/htpasswd",
        help="htpasswd file (bcrypt) used when auth_strategy is http_basic.",
    ),
    cfg.IntOpt(
        "timeout",
        default=DESIGN_MAX_TIMEOUT,
        min=1,
        help="Seconds after which an introspection that has not finished is failed "
        "by the periodic time-out task. The design bounds it at 900 s; larger values "
        "are accepted with a warning at start-up (ironic-inspector's default was 3600).",
    ),
    cfg.FloatOpt(
        "clean_up_period",
        default=30.0,
        min=0.001,
        help="Seconds between runs of the periodic clean-up tasks (time-out, Ironic "
        "synchronisation, expiry).",
    ),
    cfg.IntOpt(
        "api_max_limit",
        default=1000,
        min=1,
        help="Largest page size of a listing; a limit of 0 means this.",
    ),
    cfg.StrOpt(
        "state_path",
        default=_default_state_path(),
        sample_default="/var/lib/inspector (root) or ~/.local/share/inspector",
        help="Directory for local state: the embedded SQLite database and lock files.",
    ),
]
