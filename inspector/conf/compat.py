"""ironic-inspector 12.5's options in Inspector: what becomes of each (honoured, mapped to
ours, ignored with a warning, refused per role), the one place where its [DEFAULT]
transport_url becomes our work queue, and the options a file sets that nothing reads.

Its options that are ours too (same group, name and meaning) need nothing here: they are
read as they are. docs/configuration.md's table of every ironic-inspector option is
rendered by `render_table` (tests/unit/test_compat.py keeps it current).
"""

import dataclasses
import glob
import os
from collections.abc import Iterable, Sequence

from oslo_config import cfg

from inspector import redaction
from inspector.conf import database

GROUP = "DEFAULT"

HONOURED = "honoured"
MAPPED = "mapped"
IGNORED = "ignored"
REFUSED = "refused"

#: What the table says before each kind's text.
KIND_WORDS = {
    HONOURED: "honoured",
    MAPPED: "mapped",
    IGNORED: "ignored, with a warning when set",
    REFUSED: "refused",
}

#: The roles that serve the API (ironic-inspector's TLS and socket options are theirs).
SERVING = ("api", "all")
ROLES = ("api", "worker", "all")

#: ironic-inspector's options Inspector reads only to decide the mapping and the refusals:
#: registered so that oslo.config reads them (values, old names, locations), kept out of
#: the sample (they are not Inspector's).
OPTS = [
    cfg.StrOpt(
        "transport_url",
        secret=True,
        help="ironic-inspector's oslo.messaging URL. In its split mode (standalone = "
        "false) a rabbit:// URL is taken as [queue] transport_url and [firewall] "
        "channel_url, unless those are set.",
    ),
    cfg.BoolOpt(
        "standalone",
        default=True,
        help="ironic-inspector's topology: true (its default) is one process, "
        "`inspector all`; false is its split mode, `inspector api` + `inspector worker`.",
    ),
    cfg.BoolOpt(
        "use_ssl",
        default=False,
        help="ironic-inspector's HTTPS: refused by `inspector api` and `inspector all`.",
    ),
    cfg.StrOpt(
        "listen_unix_socket",
        help="ironic-inspector's UNIX socket: refused by `inspector api` and `inspector all`.",
    ),
]


def register(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)  # [DEFAULT]


@dataclasses.dataclass(frozen=True)
class Fate:
    """What Inspector does with one ironic-inspector option: its kind and why or how."""

    kind: str
    text: str

    def describe(self) -> str:
        return f"{KIND_WORDS[self.kind]}: {self.text}"


def _each(group: str, names: str, fate: Fate) -> dict[tuple[str, str], Fate]:
    return {(group, name): fate for name in names.split()}


_RPC = Fate(
    IGNORED,
    "oslo.messaging's RPC between ironic-inspector's API and conductor; Inspector's "
    "processes share the work queue ([queue]) instead",
)
_OSLO_SERVICE = Fate(
    IGNORED,
    "oslo.service's (backdoor, eventlet WSGI server, graceful shutdown): Inspector serves "
    "its API itself (`inspector api`, or gunicorn: docs/deployment.md) and stops its "
    "workers within [worker] get_timeout",
)
_RETRIES = Fate(
    IGNORED,
    "oslo.db's reconnection; Inspector's retry budget is [database] max_retries x retry_interval",
)
_REPLICA = Fate(IGNORED, "no read replica nor asyncio engine: every query goes to connection")
_ENGINE = Fate(
    IGNORED,
    "oslo.db's engine settings; Inspector's SQLAlchemy engine sets its own (docs/deployment.md)",
)

#: ironic-inspector's options that are not ours (or that we read otherwise), by name.
FATES: dict[tuple[str, str], Fate] = {
    **_each(
        "DEFAULT",
        "executor_thread_pool_size rpc_thread_pool_size rpc_response_timeout "
        "control_exchange rpc_ping_enabled",
        _RPC,
    ),
    ("DEFAULT", "transport_url"): Fate(
        MAPPED,
        "in ironic-inspector's split mode (standalone = false) a rabbit:// URL becomes "
        "[queue] transport_url (amqp://, each host of the URL a fail-over) and [firewall] "
        "channel_url (as it is), unless those are set; in its standalone mode it is not "
        "taken (one process: `inspector all`, whose queue is in-process)",
    ),
    ("DEFAULT", "standalone"): Fate(
        MAPPED,
        "the topology: true (its default) is one process, `inspector all`; false (split) "
        "lets transport_url become the queue of `inspector api` + `inspector worker`",
    ),
    ("DEFAULT", "use_ssl"): Fate(
        REFUSED,
        "true stops `inspector api` and `inspector all`: Inspector's API speaks plain "
        "HTTP behind a proxy that ends TLS (HAProxy, docs/deployment.md)",
    ),
    ("DEFAULT", "listen_unix_socket"): Fate(
        REFUSED,
        "set, it stops `inspector api` and `inspector all`: Inspector listens on "
        "listen_address and listen_port",
    ),
    ("DEFAULT", "listen_unix_socket_mode"): Fate(
        IGNORED, "only meant with listen_unix_socket (refused)"
    ),
    ("DEFAULT", "leader_election_interval"): Fate(
        IGNORED,
        "Inspector's elections look every [coordination] election_interval (0.5 s) and "
        "a leader's loss is seen within [coordination] lease_timeout",
    ),
    ("DEFAULT", "max_concurrency"): Fate(
        IGNORED, "[api] threads and [worker] pool_size size Inspector's processes"
    ),
    ("DEFAULT", "ipmi_address_fields"): Fate(
        IGNORED, "every *_address field of the node's driver_info, and drac_host, is read"
    ),
    ("DEFAULT", "rootwrap_config"): Fate(
        IGNORED,
        "the firewall drivers run their commands through [pxe_filter] root_helper "
        "(sudo, docs/firewall.md), not rootwrap",
    ),
    ("DEFAULT", "can_manage_boot"): Fate(
        IGNORED,
        "Inspector accepts manage_boot = true (it then boots the node); requests with "
        "manage_boot = false work as before",
    ),
    ("DEFAULT", "enable_mdns"): Fate(
        IGNORED,
        "Inspector is not published over multicast DNS: give the ramdisk its callback "
        "URL (ipa-inspection-callback-url)",
    ),
    ("DEFAULT", "publish_errors"): Fate(
        REFUSED,
        "true stops every service: oslo.log's error notifications need oslo.messaging's "
        "global configuration, which Inspector does not set up ([notifications] sends "
        "its own)",
    ),
    ("DEFAULT", "fatal_deprecations"): Fate(
        IGNORED, "deprecated options and features only warn (oslo.log's versionutils)"
    ),
    **_each(
        "DEFAULT",
        "backdoor_port backdoor_socket log_options graceful_shutdown_timeout "
        "api_paste_config wsgi_log_format tcp_keepidle wsgi_default_pool_size "
        "max_header_line wsgi_keep_alive client_socket_timeout wsgi_server_debug",
        _OSLO_SERVICE,
    ),
    **_each(
        "database",
        "use_db_reconnect db_retry_interval db_inc_retry_interval db_max_retry_interval "
        "db_max_retries",
        _RETRIES,
    ),
    **_each(
        "database",
        "slave_connection asyncio_connection asyncio_slave_connection synchronous_reader",
        _REPLICA,
    ),
    **_each(
        "database",
        "sqlite_synchronous backend mysql_sql_mode mysql_wsrep_sync_wait connection_debug "
        "connection_trace",
        _ENGINE,
    ),
    ("database", "connection_parameters"): Fate(
        IGNORED, "put the parameters in the query of [database] connection's URL"
    ),
    ("extra_hardware", "strict"): Fate(
        IGNORED,
        "Inspector's extra_hardware hook is always strict: only 4-item records are "
        "converted, and the raw data is always dropped",
    ),
}

#: ironic-inspector's groups of which Inspector reads nothing (but what FATES names).
GROUP_FATES: dict[str, Fate] = {
    "cors": Fate(IGNORED, "no CORS headers: a browser client needs them from the proxy"),
    "healthcheck": Fate(
        IGNORED, "GET /healthcheck is always served (the database's state, no switches)"
    ),
    "mdns": Fate(IGNORED, "Inspector is not published over multicast DNS"),
    "service_catalog": Fate(
        IGNORED, "ironic-inspector looked itself up only to publish itself over mDNS"
    ),
    "ssl": Fate(IGNORED, "only meant with [DEFAULT] use_ssl (refused)"),
    "swift": Fate(
        IGNORED,
        "introspection data stays in Inspector's database ([processing] store_data = "
        "swift is refused)",
    ),
    "exception": Fate(IGNORED, "ironic-lib's exception formatting, not used"),
    "ironic_lib": Fate(IGNORED, "ironic-lib's exception formatting, not used"),
    "oslo_messaging_kafka": Fate(IGNORED, "Kafka is not a queue Inspector uses"),
    "oslo_messaging_notifications": Fate(
        IGNORED, "ironic-inspector 12.5 sent no notifications; Inspector's are [notifications]"
    ),
    "oslo_messaging_rabbit": Fate(
        IGNORED,
        "the work queue (kombu) does not read it; the firewall channel's oslo.messaging "
        "does, from the --config-file files",
    ),
}

#: Groups a library reads whole, with the options its plugins add (auth plugins).
LIBRARY_GROUPS: dict[str, Fate] = {
    "ironic": Fate(
        HONOURED,
        "keystoneauth's session, adapter and auth options, and those of the auth_type's "
        "plugin, as they are",
    ),
    "keystone_authtoken": Fate(HONOURED, "keystonemiddleware's, as they are"),
    "oslo_policy": Fate(HONOURED, "oslo.policy's, as they are"),
}

#: What differs in options that are ours too.
NOTES: dict[tuple[str, str], str] = {
    ("DEFAULT", "listen_address"): "default 127.0.0.1 (ironic-inspector: ::)",
    ("DEFAULT", "timeout"): "default 900 s (ironic-inspector: 3600), above 900 s a warning; "
    "0 (never) is refused",
    ("DEFAULT", "clean_up_period"): "default 30 s (ironic-inspector: 60); 0 (never) is refused",
    ("DEFAULT", "auth_strategy"): "`inspector all` defaults to noauth",
    ("DEFAULT", "host"): "names this process in the DLM's groups and leader elections",
    ("coordination", "backend_url"): "default memory:// (ironic-inspector: "
    "memcached://localhost:11211); memcached:// by `inspector all`, and by `inspector api` "
    "+ `inspector worker` only with [coordination] single_host = true",
    ("pxe_filter", "driver"): "default noop (ironic-inspector: iptables)",
    ("processing", "store_data"): "none or database; swift is refused",
    ("database", "max_pool_size"): f"default {database.MAX_POOL_SIZE} (oslo.db: 5), for "
    "each of a process's two pools",
    ("database", "max_overflow"): f"default {database.MAX_OVERFLOW} (oslo.db: 50), for each "
    "of a process's two pools",
    ("pxe_filter", "sync_period"): "0 to 30 s (more is refused), 0 disables",
    ("DEFAULT", "introspection_delay"): "the least time between two power-ons, now "
    "across the cluster",
}


def fate(group: str, name: str, known: "Known") -> Fate | None:
    """What Inspector does with ironic-inspector's option [group] name (its name or one
    of its old names); None when nothing here knows it."""
    name = name.replace("-", "_")
    explicit = FATES.get((group, name))
    if explicit is not None:
        return explicit
    ours = known.get((group, name))
    if ours == (group, name):
        return Fate(HONOURED, NOTES.get((group, name), "as is"))
    if ours is not None:
        note = NOTES.get((group, name))
        return Fate(MAPPED, f"read as [{ours[0]}] {ours[1]}" + (f", {note}" if note else ""))
    return LIBRARY_GROUPS.get(group) or GROUP_FATES.get(group)


#: (group, name) of an option (its name, or an old name) -> the option's (group, name).
Known = dict[tuple[str, str], tuple[str, str]]


def known_options(groups: Iterable[tuple[str, Sequence[cfg.Opt]]]) -> Known:
    """Every name (old names too) of the options in `groups`, to the option's own."""
    known: Known = {}
    for group, opts in groups:
        for opt in opts:
            own = (group, opt.dest)
            known[own] = own
            for old in opt.deprecated_opts:
                old_group = _section(old.group or group)
                known[(old_group, (old.name or opt.dest).replace("-", "_"))] = own
    return known


# ----------------------------------------------------------------- the transport URL


@dataclasses.dataclass(frozen=True)
class TakeOver:
    """What ironic-inspector's [DEFAULT] transport_url becomes: the overrides, and what
    to say about it (or why it was not taken)."""

    overrides: dict[tuple[str, str], str]
    notes: tuple[str, ...]
    #: Why it was not taken (for a role that refuses an in-process queue), or "".
    not_taken: str = ""


def _explicit(conf: cfg.ConfigOpts, name: str, group: str | None = None) -> bool:
    """Set by the operator (a file, the command line, the environment), not a default."""
    location = conf.get_location(name, group)
    return location is not None and location.location.is_user_controlled


def queue_url(url: str) -> str:
    """An oslo.messaging rabbit:// URL as kombu's: `rabbit://u:p@h1:5672,u:p@h2:5672/v?q`
    -> `amqp://u:p@h1:5672/v?q;amqp://u:p@h2:5672/v?q` (kombu's fail-over list, in the
    URL's order; a host without credentials gets the broker's default, as in
    oslo.messaging)."""
    rest = url.partition("://")[2]
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    hosts, tail = rest[:cut], rest[cut:]
    return ";".join(f"amqp://{host}{tail}" for host in hosts.split(",") if host) or (
        f"amqp://{tail}"
    )


def decide(conf: cfg.ConfigOpts) -> TakeOver:
    """Whether ironic-inspector's [DEFAULT] transport_url becomes our queue (and the
    firewall's channel): only in its split mode, only a rabbit:// URL, and only where
    [queue] transport_url (and [firewall] channel_url) are not set. Pure: the same
    answer before and after `apply`."""
    url = conf.transport_url
    if not url or not _explicit(conf, "transport_url"):
        if conf.standalone:
            return TakeOver({}, ())
        why = (
            "ironic-inspector's [DEFAULT] standalone = false (its split mode) without its "
            "transport_url (oslo.messaging's default: RabbitMQ as guest on localhost): "
            "set [queue] transport_url to amqp://... (RabbitMQ) or redis://..."
        )
        return TakeOver({}, (why,), why)
    shown = redaction.mask(url)
    scheme = url.partition("://")[0].lower()
    if conf.standalone:
        why = (
            f"ironic-inspector's [DEFAULT] transport_url = {shown} is not taken as the "
            "queue: its [DEFAULT] standalone = true (the default) is one process, whose "
            "queue is in-process (`inspector all`); for `inspector api` + `inspector "
            "worker` set [DEFAULT] standalone = false (its split mode) or [queue] "
            "transport_url"
        )
        return TakeOver({}, (why,), why)
    if scheme != "rabbit":
        why = (
            f"ironic-inspector's [DEFAULT] transport_url = {shown} is not taken as the "
            f"queue: only rabbit:// is (not {scheme}://); set [queue] transport_url to "
            "amqp://... (RabbitMQ) or redis://..."
        )
        return TakeOver({}, (why,), why)
    if _explicit(conf, "transport_url", "queue"):
        note = (
            f"ironic-inspector's [DEFAULT] transport_url = {shown} is not taken: [queue] "
            "transport_url is set"
        )
        return TakeOver({}, (note,))
    overrides = {("queue", "transport_url"): queue_url(url)}
    taken = f"[queue] transport_url = {redaction.mask(overrides['queue', 'transport_url'])}"
    if not _explicit(conf, "channel_url", "firewall"):
        overrides["firewall", "channel_url"] = url
        taken += f" and [firewall] channel_url = {shown}"
    note = (
        f"ironic-inspector's [DEFAULT] transport_url (its split mode: [DEFAULT] standalone "
        f"= false) is taken as {taken}"
    )
    return TakeOver(overrides, (note,))


def apply(conf: cfg.ConfigOpts) -> TakeOver:
    """Set what `decide` says; returns it."""
    take_over = decide(conf)
    for (group, name), value in take_over.overrides.items():
        conf.set_override(name, value, group=group)
    return take_over


# ----------------------------------------------------------------- per role


def refusals(conf: cfg.ConfigOpts, role: str) -> list[str]:
    """ironic-inspector's settings `inspector <role>` cannot honour, each naming the
    option and what to set."""
    problems = []
    if role in SERVING and conf.use_ssl:
        problems.append(
            "[DEFAULT] use_ssl = true: Inspector's API speaks plain HTTP; end TLS in the "
            "proxy in front of it (HAProxy, docs/deployment.md) and set use_ssl = false"
        )
    if role in SERVING and conf.listen_unix_socket:
        problems.append(
            f"[DEFAULT] listen_unix_socket = {conf.listen_unix_socket}: Inspector's API "
            "listens on TCP only; unset it and set listen_address and listen_port"
        )
    if conf.publish_errors:
        problems.append(
            "[DEFAULT] publish_errors = true: oslo.log's error notifications need "
            "oslo.messaging's global configuration, which Inspector does not set up; set "
            "it to false ([notifications] sends Inspector's own)"
        )
    return problems


# ----------------------------------------------------------------- what nothing reads


def _section(name: str) -> str:
    """A file's section as oslo.config names the group."""
    return name if name == "DEFAULT" else name.lower()


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read: --config-file (or the default files), then each
    --config-dir's *.conf in name order."""
    files = [path for path in conf.config_file or () if os.path.isfile(path)]
    for directory in conf.config_dir or ():
        files.extend(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return files


def set_in_files(conf: cfg.ConfigOpts) -> dict[tuple[str, str], str]:
    """(group, option) -> the last file that sets it, for every option of every file."""
    found: dict[tuple[str, str], str] = {}
    for path in config_files(conf):
        sections: dict[str, dict[str, list[str]]] = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue  # oslo.config already said so, or read it
        for section, values in sections.items():
            for key in values:
                found[_section(section), key.replace("-", "_")] = path
    return found


def unread(conf: cfg.ConfigOpts, known: Known) -> list[str]:
    """A warning for each option set in a file that Inspector does not read: an
    ironic-inspector option it ignores (saying why), or one nobody knows (a typo?)."""
    found = (
        warning(group, name, path, known) for (group, name), path in set_in_files(conf).items()
    )
    return [each for each in found if each]


def warning(group: str, name: str, path: str, known: Known) -> str | None:
    """The warning for [group] name set in the file `path`, or None when it is read."""
    if known.get((group, name)) is not None and (group, name) not in FATES:
        return None
    found = fate(group, name, known)
    if found is None:
        return (
            f"[{group}] {name} (set in {path}) is not an option of Inspector nor of "
            "ironic-inspector 12.5: ignored"
        )
    if found.kind == IGNORED:
        return f"[{group}] {name} (set in {path}) is ironic-inspector's and ignored: {found.text}"
    return None


# ----------------------------------------------------------------- the documentation


def render_table(options: Iterable[tuple[str, str, Sequence[str]]], known: Known) -> str:
    """docs/configuration.md's table of ironic-inspector's options: one table a group,
    one row for the options of the same fate (in the order of the first). `options`:
    (group, name, old names as "[group] name") in the sample's order."""
    by_group: dict[str, list[tuple[str, Fate]]] = {}
    for group, name, old in options:
        found = fate(group, name, known)
        if found is None:
            raise ValueError(f"[{group}] {name}: no fate (add it to inspector/conf/compat.py)")
        label = f"`{name}`" + (f" (old name {', '.join(f'`{o}`' for o in old)})" if old else "")
        by_group.setdefault(group, []).append((label, found))
    lines: list[str] = []
    for group, rows in by_group.items():
        lines += ["", f"#### `[{group}]`", "", "| option | what Inspector does |", "|---|---|"]
        merged: dict[Fate, list[str]] = {}
        for label, found in rows:
            merged.setdefault(found, []).append(label)
        lines += [
            f"| {', '.join(labels)} | {found.describe()} |" for found, labels in merged.items()
        ]
    return "\n".join(lines[1:]) + "\n"
