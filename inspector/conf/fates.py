"""What Inspector does with each option of ironic-inspector 12.5 that is not its own (or
that it reads otherwise): honoured, mapped to ours, ignored with a warning, or refused.

The table is text, one entry per fate: `[group] names...` (`*`: the whole group, for
the groups of which Inspector reads nothing but what the entries name), then `= kind:
text`. inspector.conf.compat renders docs/configuration.md's table from it.
"""

import dataclasses
from collections.abc import Iterable, Sequence

from oslo_config import cfg

from inspector.conf import database, libraries

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


@dataclasses.dataclass(frozen=True)
class Fate:
    """What Inspector does with one ironic-inspector option: its kind and why or how."""

    kind: str
    text: str

    def describe(self) -> str:
        return f"{KIND_WORDS[self.kind]}: {self.text}"


#: ironic-inspector's options that are not ours (or that we read otherwise), and its
#: groups that a library reads whole (with the options its plugins add) or of which
#: Inspector reads nothing.
TABLE = """
[DEFAULT] executor_thread_pool_size rpc_thread_pool_size rpc_response_timeout
    control_exchange rpc_ping_enabled
= ignored: oslo.messaging's RPC between ironic-inspector's API and conductor;
  Inspector's processes share the work queue ([queue]) instead

[DEFAULT] transport_url
= mapped: in ironic-inspector's split mode (standalone = false) a rabbit:// URL becomes
  [queue] transport_url (amqp://, each host of the URL a fail-over) and [firewall]
  channel_url (as it is), unless those are set; in its standalone mode it is not taken
  (one process: `inspector all`, whose queue is in-process)

[DEFAULT] standalone
= mapped: the topology: true (its default) is one process, `inspector all`; false
  (split) lets transport_url become the queue of `inspector api` + `inspector worker`

[DEFAULT] use_ssl
= refused: true stops `inspector api` and `inspector all`: Inspector's API speaks plain
  HTTP behind a proxy that ends TLS (HAProxy, docs/deployment.md)

[DEFAULT] listen_unix_socket
= refused: set, it stops `inspector api` and `inspector all`: Inspector listens on
  listen_address and listen_port

[DEFAULT] listen_unix_socket_mode
= ignored: only meant with listen_unix_socket (refused)

[DEFAULT] leader_election_interval
= ignored: Inspector's elections look every [coordination] election_interval (0.5 s) and
  a leader's loss is seen within [coordination] lease_timeout

[DEFAULT] max_concurrency
= ignored: [api] threads and [worker] pool_size size Inspector's processes

[DEFAULT] ipmi_address_fields
= ignored: every *_address field of the node's driver_info, and drac_host, is read

[DEFAULT] rootwrap_config
= ignored: the firewall drivers run their commands through [pxe_filter] root_helper
  (sudo, docs/firewall.md), not rootwrap

[DEFAULT] can_manage_boot
= ignored: Inspector accepts manage_boot = true (it then boots the node); requests with
  manage_boot = false work as before

[DEFAULT] enable_mdns
= ignored: Inspector is not published over multicast DNS: give the ramdisk its callback
  URL (ipa-inspection-callback-url)

[DEFAULT] publish_errors
= refused: true stops every service: oslo.log's error notifications need
  oslo.messaging's global configuration, which Inspector does not set up
  ([notifications] sends its own)

[DEFAULT] fatal_deprecations
= ignored: deprecated options and features only warn (oslo.log's versionutils)

[DEFAULT] backdoor_port backdoor_socket log_options graceful_shutdown_timeout
    api_paste_config wsgi_log_format tcp_keepidle wsgi_default_pool_size max_header_line
    wsgi_keep_alive client_socket_timeout wsgi_server_debug
= ignored: oslo.service's (backdoor, eventlet WSGI server, graceful shutdown): Inspector
  serves its API itself (`inspector api`, or gunicorn: docs/deployment.md) and stops its
  workers within [worker] get_timeout

[database] use_db_reconnect db_retry_interval db_inc_retry_interval
    db_max_retry_interval db_max_retries
= ignored: oslo.db's reconnection; Inspector's retry budget is [database] max_retries x
  retry_interval

[database] slave_connection asyncio_connection asyncio_slave_connection
    synchronous_reader
= ignored: no read replica nor asyncio engine: every query goes to connection

[database] sqlite_synchronous backend mysql_sql_mode mysql_wsrep_sync_wait
    connection_debug connection_trace
= ignored: oslo.db's engine settings; Inspector's SQLAlchemy engine sets its own
  (docs/deployment.md)

[database] connection_parameters
= ignored: put the parameters in the query of [database] connection's URL

[extra_hardware] strict
= ignored: Inspector's extra_hardware hook is always strict: only 4-item records are
  converted, and the raw data is always dropped

[ironic] *
= honoured: keystoneauth's session, adapter and auth options, and those of the
  auth_type's plugin, as they are

[ironic] tls_ciphers tls_min_version
= honoured: keystoneauth's session TLS options, by the keystoneauth1 releases that have
  them (later than 5.13, OpenStack 2026.1's)

[keystone_authtoken] *
= honoured: keystonemiddleware's, as they are

[oslo_policy] *
= honoured: oslo.policy's, as they are

[cors] *
= ignored: no CORS headers: a browser client needs them from the proxy

[healthcheck] *
= ignored: GET /healthcheck is always served (the database's state, no switches)

[mdns] *
= ignored: Inspector is not published over multicast DNS

[service_catalog] *
= ignored: ironic-inspector looked itself up only to publish itself over mDNS

[ssl] *
= ignored: only meant with [DEFAULT] use_ssl (refused)

[swift] *
= ignored: introspection data stays in Inspector's database ([processing] store_data =
  swift is refused)

[exception] *
= ignored: ironic-lib's exception formatting, not used

[ironic_lib] *
= ignored: ironic-lib's exception formatting, not used

[oslo_messaging_kafka] *
= ignored: Kafka is not a queue Inspector uses

[oslo_messaging_notifications] *
= ignored: ironic-inspector 12.5 sent no notifications; Inspector's are [notifications]

[oslo_messaging_rabbit] *
= ignored: the work queue (kombu) does not read it; the firewall channel's
  oslo.messaging does, from the --config-file files
"""


def _parse(table: str) -> tuple[dict[tuple[str, str], Fate], dict[str, Fate]]:
    """TABLE's entries: the fates by (group, option), and by group (`*`)."""
    by_option: dict[tuple[str, str], Fate] = {}
    by_group: dict[str, Fate] = {}
    for entry in table.strip().split("\n\n"):
        head, _, body = entry.partition("\n= ")
        group, _, names = head.removeprefix("[").partition("] ")
        kind, _, text = " ".join(body.split()).partition(": ")
        found = Fate(kind, text)
        for name in names.split():
            if name == "*":
                by_group[group] = found
            else:
                by_option[group, name] = found
    return by_option, by_group


FATES, GROUP_FATES = _parse(TABLE)

#: What differs in options that are ours too.
NOTES: dict[tuple[str, str], str] = {
    ("DEFAULT", "listen_address"): "default 127.0.0.1 (ironic-inspector: ::)",
    ("DEFAULT", "timeout"): "default 900 s (ironic-inspector: 3600), above 900 s a warning; "
    "0 (never) is refused",
    ("DEFAULT", "clean_up_period"): "default 30 s (ironic-inspector: 60); 0 (never) is refused",
    ("DEFAULT", "auth_strategy"): "`inspector all` defaults to noauth",
    ("DEFAULT", "host"): "names this process in the DLM's groups and leader elections",
    ("coordination", "backend_url"): "default memory:// (ironic-inspector: "
    "memcached://localhost:11211); memcached:// by `inspector all`, `inspector api` and "
    "`inspector worker` (these two warn once at start-up what memcached cannot promise), "
    "by `inspector pxe-filter` only with [coordination] single_host = true",
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
    of its old names); None when nothing here knows it (nor the library that reads the
    group, for the groups a library reads whole: inspector.conf.libraries)."""
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
    found = GROUP_FATES.get(group)
    if found is not None and found.kind == HONOURED and not libraries.reads(group, name):
        return None  # a library reads the section, but not this name
    return found


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
                old_group = section(old.group or group)
                known[(old_group, (old.name or opt.dest).replace("-", "_"))] = own
    return known


def section(name: str) -> str:
    """A file's section as oslo.config names the group."""
    return name if name == "DEFAULT" else name.lower()
