"""[api] options: request size limits, /v1/continue hardening, the built-in server, the
time a request may take."""

from oslo_config import cfg

GROUP = "api"

#: Seconds after which a request starts no backend call: with the database's own bounds
#: on one call, every answer within 10 s (docs/configuration.md has the sum).
REQUEST_TIMEOUT = 4.0

OPTS = [
    cfg.IntOpt(
        "max_request_body_size",
        default=1024 * 1024,
        min=1024,
        help="Largest request body in bytes, except /v1/continue; larger ones get 413.",
    ),
    cfg.IntOpt(
        "max_continue_body_size",
        default=64 * 1024 * 1024,
        min=1024,
        help="Largest /v1/continue body in bytes (ramdisk data, with its base64 logs).",
    ),
    cfg.ListOpt(
        "continue_allowed_networks",
        default=[],
        help="CIDRs from which /v1/continue is accepted (e.g. the provisioning "
        "network). Empty: from anywhere. Behind a proxy, enable "
        "[oslo_middleware] enable_proxy_headers_parsing so the client address is seen.",
    ),
    cfg.IntOpt(
        "continue_rate_limit",
        default=120,
        min=0,
        help="Requests per minute accepted on /v1/continue from one source address, per "
        "API process; more get 429. 0 disables the limit.",
    ),
    cfg.IntOpt(
        "threads",
        default=16,
        min=1,
        help="Request threads of the built-in server (`inspector api`, `inspector all`); "
        "it runs 48 more for clients still sending their request, so that a few slow ones "
        "do not hold these.",
    ),
    cfg.FloatOpt(
        "request_timeout",
        default=REQUEST_TIMEOUT,
        min=0.5,
        max=60.0,
        help="Seconds a request may spend on the backends: past them it starts no "
        "database statement, no Ironic call and no retry, and is answered 503 with "
        "Retry-After (a ramdisk retries a 503, not a time-out); an Ironic call waits at "
        "most what is left. A call already started ends within its own bound, so an "
        "answer comes within this plus one call's bound: with the defaults "
        "4 + [database] connect_timeout 2 + max(socket_timeout, statement_timeout) 3 "
        "= 9 s, under ironic-python-agent's 30 s and a 10 s budget.",
    ),
    cfg.IntOpt(
        "max_rules_check_nodes",
        default=100,
        min=1,
        max=10000,
        help="Most nodes one rules check (POST /v1/rules/check, `inspector rules check`) "
        "evaluates rules against; more: 400. Each node costs an Ironic call and a read "
        "of its processed data, within [api] request_timeout. Not in ironic-inspector.",
    ),
]
