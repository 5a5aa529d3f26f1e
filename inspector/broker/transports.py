"""Which kombu transport a queue URL selects and what each one guarantees: a plain table.

It builds kombu connections and knows their error classes; it never touches a message.
"""

import dataclasses
import urllib.parse
from typing import TYPE_CHECKING, Any

from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import ConfigError

if TYPE_CHECKING:
    import kombu

#: Seconds between two looks at an empty in-memory queue (kombu polls it).
MEMORY_POLLING_INTERVAL = 0.02
#: kombu's BRPOP waits this long on Redis: a Redis read must be allowed longer.
REDIS_BRPOP_TIMEOUT = 1.0


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """How long the broker may keep a client waiting ([queue] options)."""

    #: Seconds for a TCP connection and, on amqp, its AMQP handshake.
    connect: float = 2.0
    #: Seconds one read or write of an open connection may wait: a publisher confirm, a
    #: declaration, a Redis reply. A hung broker (packets dropped, process frozen) fails
    #: the call after this instead of holding the thread.
    socket: float = 3.0
    #: Seconds a put or a count may take, reconnections and retries included.
    operation: float = 5.0

    @classmethod
    def from_conf(cls, conf: Any) -> "Timeouts":
        group = conf.queue
        return cls(group.connect_timeout, group.socket_timeout, group.operation_timeout)

    def redis_socket(self) -> float:
        """Redis's read timeout: above kombu's BRPOP so that an empty poll never fails."""
        return max(self.socket, REDIS_BRPOP_TIMEOUT + 1.0)


DEFAULT_TIMEOUTS = Timeouts()


@dataclasses.dataclass(frozen=True)
class Transport:
    """What one URL scheme gives.

    amqp (RabbitMQ): durable queue, persistent messages, publisher confirms; the broker
      requeues the unacked messages of a connection that closes or dies.
    redis: ack emulation; unacked messages are kept aside and return to the queue when
      their channel closes, or, when the process died, once older than the visibility
      timeout (a periodic sweep by any consumer).
    memory: one process only; unacked messages return when their connection closes.
    """

    name: str
    #: Only the threads of one process share the queue.
    is_single_process: bool
    #: The broker itself puts back unacked messages of a closed connection; else we do.
    restores_on_close: bool
    #: Unacked messages of a dead process come back only after the visibility timeout.
    has_visibility_timeout: bool

    @property
    def is_amqp(self) -> bool:
        return self.name == "amqp"

    def options(
        self, queue_name: str, visibility_timeout: float, timeouts: Timeouts = DEFAULT_TIMEOUTS
    ) -> dict[str, Any]:
        """kombu transport options for a queue named `queue_name`."""
        if self.name == "amqp":
            # py-amqp sets them as SO_RCVTIMEO/SO_SNDTIMEO: without them a publisher
            # confirm or a declaration waits for ever on a broker that stopped answering.
            return {
                "confirm_publish": True,
                "read_timeout": timeouts.socket,
                "write_timeout": timeouts.socket,
            }
        if self.name == "redis":
            # The unacked bookkeeping is per queue, not kombu's global keys, so that
            # another kombu application (or another queue) on the same database never
            # restores our messages with its own visibility timeout, nor we its.
            return {
                "visibility_timeout": visibility_timeout,
                "unacked_key": f"{queue_name}.unacked",
                "unacked_index_key": f"{queue_name}.unacked_index",
                "unacked_mutex_key": f"{queue_name}.unacked_mutex",
                "socket_connect_timeout": timeouts.connect,
                "socket_timeout": timeouts.redis_socket(),
                "socket_keepalive": True,
            }
        return {"polling_interval": MEMORY_POLLING_INTERVAL}


_AMQP = Transport("amqp", False, True, False)
_REDIS = Transport("redis", False, False, True)
_MEMORY = Transport("memory", True, False, False)

#: URL scheme -> transport.
TRANSPORTS: dict[str, Transport] = {
    "amqp": _AMQP,
    "pyamqp": _AMQP,
    "amqps": _AMQP,
    "redis": _REDIS,
    "rediss": _REDIS,
    "memory": _MEMORY,
}


def select(url: str) -> Transport:
    scheme = url.partition("://")[0].lower()
    try:
        return TRANSPORTS[scheme]
    except KeyError:
        raise ConfigError(
            f"queue URL {redact(url)!r}: unknown transport {scheme!r}; "
            f"use one of {', '.join(sorted(TRANSPORTS))}"
        ) from None


def connect(
    url: str,
    transport: Transport,
    options: dict[str, Any],
    tls: Tls = DEFAULT_TLS,
    connect_timeout: float = DEFAULT_TIMEOUTS.connect,
) -> "kombu.Connection":
    """A kombu Connection object, over TLS as `tls` says for url (broker.tls); nothing is
    sent on the network yet."""
    import kombu  # noqa: PLC0415 - `config check` selects a transport without kombu

    return kombu.Connection(
        url,
        transport_options=options,
        connect_timeout=connect_timeout,
        ssl=tls.kombu_ssl(url) or False,
    )


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    if parts.username:
        netloc = f"{parts.username}:***@{netloc}"
    else:
        netloc = f":***@{netloc}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def recoverable_errors(connection: "kombu.Connection") -> tuple[type[BaseException], ...]:
    """Errors after which a new connection may succeed."""
    import kombu.exceptions  # noqa: PLC0415 - as in connect

    return (
        *connection.recoverable_connection_errors,
        kombu.exceptions.OperationalError,
        OSError,
    )


def library_errors(connection: "kombu.Connection") -> tuple[type[BaseException], ...]:
    """Every error of kombu and its client libraries, to be wrapped before leaving."""
    import kombu.exceptions  # noqa: PLC0415 - as in connect

    return (
        *recoverable_errors(connection),
        *connection.connection_errors,
        *connection.channel_errors,
        kombu.exceptions.KombuError,
    )
