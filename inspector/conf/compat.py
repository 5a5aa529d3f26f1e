"""ironic-inspector 12.5's options in Inspector: the one place where its [DEFAULT]
transport_url becomes our work queue, its settings each role refuses, the options a file
sets that nothing reads, and docs/configuration.md's table of what becomes of each
(the fates: inspector.conf.fates).

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
from inspector.conf import libraries
from inspector.conf.fates import (
    FATES,
    HONOURED,
    IGNORED,
    MAPPED,
    REFUSED,
    Fate,
    Known,
    fate,
    known_options,
    section,
)

__all__ = [
    "HONOURED",
    "IGNORED",
    "MAPPED",
    "REFUSED",
    "Fate",
    "Known",
    "TakeOver",
    "apply",
    "decide",
    "fate",
    "known_options",
    "refusals",
    "render_table",
    "unread",
    "warning",
]

GROUP = "DEFAULT"

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


def config_files(conf: cfg.ConfigOpts) -> list[str]:
    """The files oslo.config read: --config-file (or the default files), then each
    --config-dir's *.conf in name order."""
    files = [path for path in conf.config_file or () if os.path.isfile(path)]
    for directory in conf.config_dir or ():
        files.extend(sorted(glob.glob(os.path.join(directory, "*.conf"))))
    return files


def _sections(conf: cfg.ConfigOpts) -> list[tuple[str, dict[str, dict[str, list[str]]]]]:
    """(path, its sections as parsed) of every file oslo.config read."""
    parsed = []
    for path in config_files(conf):
        sections: dict[str, dict[str, list[str]]] = {}
        try:
            cfg.ConfigParser(path, sections).parse()
        except (OSError, cfg.ParseError):
            continue  # oslo.config already said so, or read it
        parsed.append((path, sections))
    return parsed


def set_in_files(conf: cfg.ConfigOpts) -> dict[tuple[str, str], str]:
    """(group, option) -> the last file that sets it, for every option of every file."""
    found: dict[tuple[str, str], str] = {}
    for path, sections in _sections(conf):
        for header, values in sections.items():
            for key in values:
                found[section(header), key.replace("-", "_")] = path
    return found


def auth_sections(conf: cfg.ConfigOpts) -> set[str]:
    """The sections an `auth_section` of [ironic] or [keystone_authtoken] names (the last
    file's value wins): keystoneauth reads its auth options there."""
    named: dict[str, str] = {}
    for _path, sections in _sections(conf):
        for header, values in sections.items():
            group = section(header)
            if group in libraries.AUTH_SECTION_OWNERS and values.get("auth_section"):
                named[group] = values["auth_section"][-1].strip()
    return {section(name) for name in named.values() if name}


def unread(conf: cfg.ConfigOpts, known: Known) -> list[str]:
    """A warning for each option set in a file that Inspector does not read: an
    ironic-inspector option it ignores (saying why), or one nobody knows (a typo?)."""
    auth = auth_sections(conf)
    found = (
        warning(group, name, path, known)
        for (group, name), path in set_in_files(conf).items()
        if not (group in auth and libraries.reads_auth(name))
    )
    return [each for each in found if each]


def warning(group: str, name: str, path: str, known: Known) -> str | None:
    """The warning for [group] name set in the file `path`, or None when it is read."""
    if known.get((group, name)) is not None and (group, name) not in FATES:
        return None
    found = fate(group, name, known)
    if found is None:
        reader = libraries.reader(group)
        nor = (
            f", of ironic-inspector 12.5 nor of {reader}"
            if reader
            else (" nor of ironic-inspector 12.5")
        )
        return f"[{group}] {name} (set in {path}) is not an option of Inspector{nor}: ignored"
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
            raise ValueError(f"[{group}] {name}: no fate (add it to inspector/conf/fates.py)")
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
