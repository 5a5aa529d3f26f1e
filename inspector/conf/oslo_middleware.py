"""[oslo_middleware] options: oslo.middleware's name for trusting proxy headers."""

from oslo_config import cfg

GROUP = "oslo_middleware"

OPTS = [
    cfg.BoolOpt(
        "enable_proxy_headers_parsing",
        default=False,
        help="Trust X-Forwarded-For/-Proto/-Host/-Port/-Prefix from the proxy in front "
        "(HAProxy), so that links and client addresses are the proxy's clients'. Enable "
        "it only when every request comes through the proxy.",
    ),
]
