"""What each service role asks of the configuration: the checks `inspector api`, `inspector
worker` and `inspector all` run before they start, which `inspector config check --role`
runs too (these functions, not a copy). Also the HA guard: processes that must share work
refuse in-process backends.

Imports only what the checks read (not the services' wiring): `inspector config check`
runs before each service starts (ExecStartPre=).
"""

import dataclasses
import logging

from oslo_config import cfg

from inspector import conf as config
from inspector.broker import transports
from inspector.broker.tls import Tls
from inspector.conf import compat
from inspector.coordination import backends as dlm
from inspector.errors import ConfigError

LOG = logging.getLogger(__name__)

ROLES = compat.ROLES
#: Where an option that no file nor argument set takes its value from.
DEFAULTS = (cfg.Locations.opt_default, cfg.Locations.set_default)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One role's answer to a configuration."""

    role: str
    #: Why the role would not start (each naming the option and what to set); empty: it would.
    problems: tuple[str, ...]
    #: Which of ironic-inspector's options were taken for which of ours (or why not).
    taken: tuple[str, ...]
    #: Options set in a file that nothing reads.
    unread: tuple[str, ...]

    @property
    def refused(self) -> bool:
        return bool(self.problems)

    def message(self) -> str:
        return "\n".join(self.problems)


def build(role: str) -> cfg.ConfigOpts:
    """A ConfigOpts with every option registered and the role's defaults: `inspector all`
    is the embedded first contact (noauth)."""
    conf = config.build()
    if role == "all":
        conf.set_default("auth_strategy", "noauth")
    return conf


def _auth_strategy(conf: cfg.ConfigOpts, role: str) -> str:
    """The strategy `inspector <role>` would use: the one set, else the role's default
    (`config check` without a role loads one configuration, on `inspector api`'s)."""
    found = conf.get_location("auth_strategy")  # registered: always found
    unset = found is not None and found.location in DEFAULTS

    return "noauth" if role == "all" and unset else conf.auth_strategy


def check(conf: cfg.ConfigOpts, role: str) -> Verdict:
    """Whether `inspector <role>` would start with conf (already loaded and validated)."""
    take_over = compat.decide(conf)
    problems = []
    refused = compat.refusals(conf, role)
    if refused:
        problems.append(
            f"`inspector {role}` cannot honour ironic-inspector's settings:\n  "
            + "\n  ".join(refused)
        )
    try:
        transports.select(conf.queue.transport_url)
    except ConfigError as exc:
        problems.append(f"[queue] transport_url: {exc.message}")
    tls = Tls.from_conf(conf)
    if tls.enabled or tls.applies_to(conf.queue.transport_url):
        try:
            tls.check()
        except ConfigError as exc:
            problems.append(exc.message)
    if role in compat.SERVING and _auth_strategy(conf, role) == "keystone":
        # keystoneauth's plugins: for the keystone strategy only.
        from inspector.api import keystone  # noqa: PLC0415

        problems.extend(keystone.keystone_problems(conf))
    if role == "all":
        unusable = dlm.unsupported(conf.coordination.backend_url)
        if unusable:
            problems.append(unusable)
    else:
        try:
            check_shared_backends(conf, role)
        except ConfigError as exc:
            shared = exc.message
            if take_over.not_taken and conf.queue.transport_url.startswith("memory:"):
                shared += f"\n{take_over.not_taken}"
            problems.append(shared)
    return Verdict(
        role,
        tuple(problems),
        take_over.notes,
        tuple(compat.unread(conf, config.known_options(conf))),
    )


def check_shared_backends(conf: cfg.ConfigOpts, role: str) -> None:
    """`inspector api` and `inspector worker` share work with other processes: an
    in-process queue or lock table would silently split the cluster. Refuse them, and a
    DLM Inspector cannot use; say what a DLM with a caveat (memcached, as
    ironic-inspector's split mode ran on it) cannot promise."""
    problems = []
    backend_url = conf.coordination.backend_url
    if conf.queue.transport_url.startswith("memory:"):
        problems.append(
            "[queue] transport_url = memory:// only works inside one process; "
            "use amqp://... (RabbitMQ) or redis://..."
        )
    unusable = dlm.unsupported(backend_url)
    if unusable:
        problems.append(unusable)
    elif backend_url.startswith("memory:"):
        problems.append(
            "[coordination] backend_url = memory:// only works inside one process; "
            "use redis://..., etcd3+http://... or zookeeper://..."
        )
    if problems:
        raise ConfigError(
            f"`inspector {role}` shares its work with other processes, so:\n  "
            + "\n  ".join(problems)
            + "\n(`inspector all` runs everything in one process on these defaults)"
        )
    if not conf.database.connection:
        LOG.warning("Embedded SQLite database: every process must run on this host")
    if backend_url.startswith("file:"):
        LOG.warning("file locks only work between processes of this host")
    caveat = dlm.caveat(backend_url)
    if caveat and not conf.coordination.single_host:
        LOG.warning("[coordination] backend_url = %s://...: %s", dlm.scheme_of(backend_url), caveat)


def require(conf: cfg.ConfigOpts, role: str) -> None:
    """Log what was taken from ironic-inspector's options and what nothing reads, once,
    at start-up; raise ConfigError (exit status 2) when the role would be refused."""
    verdict = check(conf, role)
    for note in verdict.taken:
        LOG.info("%s", note)
    for warning in verdict.unread:
        LOG.warning("%s", warning)
    if verdict.refused:
        raise ConfigError(verdict.message())
