"""Which kombu transport a queue URL selects and what each one guarantees: a plain table.

It builds kombu connections and knows their error classes; it never touches a message.
"""

import dataclasses
import urllib.parse
from typing import Any

import kombu
import kombu.exceptions

from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import ConfigError

#: Seconds to wait for a TCP connection to the broker.
CONNECT_TIMEOUT = 5.0
#: Seconds a Redis command may take; above kombu's 1 s BRPOP so a poll never times out.
REDIS_SOCKET_TIMEOUT = 10.0
#: Seconds between two looks at an empty in-memory queue (kombu polls it).
MEMORY_POLLING_INTERVAL = 0.02


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

    def options(self, queue_name: str, visibility_timeout: float) -> dict[str, Any]:
        """kombu transport options for a queue named `queue_name`."""
        if self.name == "amqp":
            return {"confirm_publish": True}
        if self.name == "redis":
            # The unacked bookkeeping is per queue, not kombu's global keys, so that
            # another kombu application (or another queue) on the same database never
            # restores our messages with its own visibility timeout, nor we its.
            return {
                "visibility_timeout": visibility_timeout,
                "unacked_key": f"{queue_name}.unacked",
                "unacked_index_key": f"{queue_name}.unacked_index",
                "unacked_mutex_key": f"{queue_name}.unacked_mutex",
                "socket_connect_timeout": CONNECT_TIMEOUT,
                "socket_timeout": REDIS_SOCKET_TIMEOUT,
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
    url: str, transport: Transport, options: dict[str, Any], tls: Tls = DEFAULT_TLS
) -> kombu.Connection:
    """A kombu Connection object, over TLS as `tls` says for url (broker.tls); nothing is
    sent on the network yet."""
    return kombu.Connection(
        url,
        transport_options=options,
        connect_timeout=CONNECT_TIMEOUT,
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


def recoverable_errors(connection: kombu.Connection) -> tuple[type[BaseException], ...]:
    """Errors after which a new connection may succeed."""
    return (
        *connection.recoverable_connection_errors,
        kombu.exceptions.OperationalError,
        OSError,
    )


def library_errors(connection: kombu.Connection) -> tuple[type[BaseException], ...]:
    """Every error of kombu and its client libraries, to be wrapped before leaving."""
    return (
        *recoverable_errors(connection),
        *connection.connection_errors,
        *connection.channel_errors,
        kombu.exceptions.KombuError,
    )
