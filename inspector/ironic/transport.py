"""Keep-alive HTTP/1.1 connections to one Ironic endpoint, on the standard library's
http.client: direct, or through an HTTP proxy (absolute targets for http, a CONNECT
tunnel for https), with the TLS context the [ironic] options give.

Not urllib3: its pool, URL parsing and response wrapping cost 0.33 ms of CPU per call
here against 0.18 ms for http.client alone, and a worker makes five calls per
introspection. What it gave that we use is here: connections reused last in, first
out; one that the server closed while idle is noticed before it is used; nothing is
retried (the client's retry policy is the only one).
"""

import base64
import http.client
import os
import select
import ssl
import threading
import urllib.parse
import weakref
from typing import Any

#: What a request that got no answer raises: the socket's errors (refused, reset,
#: timed out, TLS) and http.client's (a reply that is not HTTP, a closed connection).
FAILURES = (OSError, http.client.HTTPException)


class Origin:
    """Connections to `endpoint`'s scheme, host and port. Thread-safe: a connection is
    used by one request at a time."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float,
        context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        keep: int = 32,
    ) -> None:
        where = urllib.parse.urlsplit(endpoint)
        self.https = where.scheme == "https"
        self.host = where.hostname or ""
        self.port = where.port or (443 if self.https else 80)
        self.timeout = timeout
        self.context = context if self.https else None
        self.proxy = urllib.parse.urlsplit(proxy) if proxy else None
        self._keep = keep
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        # Idle connections closed when the Origin goes, not left to the garbage collector.
        weakref.finalize(self, _close_all, self._idle)
        # Through a proxy, a plain-HTTP request names its whole URL; a tunnel does not.
        self._prefix = f"http://{where.netloc}" if self.proxy and not self.https else ""
        self._proxy_headers = _proxy_authorization(self.proxy)

    def request(
        self,
        method: str,
        target: str,
        body: bytes | None,
        headers: dict[str, str],
        timeout: float | None = None,
    ) -> tuple[int, bytes, Any]:
        """(status, body, headers) of one request; raises one of FAILURES when no whole
        answer came (the connection is then dropped). `timeout` (default: the Origin's)
        bounds connecting and each wait for the server's bytes."""
        connection = self._checkout()
        _set_timeout(connection, self.timeout if timeout is None else timeout)
        if self._prefix:
            headers = {**headers, **self._proxy_headers}
        try:
            connection.request(method, self._prefix + target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except BaseException:
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            self._checkin(connection)
        return response.status, data, response.headers

    def close(self) -> None:
        with self._lock:
            idle = self._idle[:]
            self._idle.clear()
        _close_all(idle)

    def _checkout(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._new()
            if not _dropped(connection):
                return connection
            connection.close()

    def _checkin(self, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._keep:
                self._idle.append(connection)
                return
        connection.close()

    def _new(self) -> http.client.HTTPConnection:
        if self.proxy is None:
            host, port = self.host, self.port
        else:
            host, port = self.proxy.hostname or "", self.proxy.port or 80
        if not self.https:
            return http.client.HTTPConnection(host, port, timeout=self.timeout)
        connection = http.client.HTTPSConnection(
            host, port, timeout=self.timeout, context=self.context
        )
        if self.proxy is not None:
            connection.set_tunnel(self.host, self.port, headers=self._proxy_headers)
        return connection


def tls_context(
    verify: bool | str | None, cert: str | tuple[str, str] | None, ca_bundle: str
) -> ssl.SSLContext:
    """The TLS context of keystoneauth's session options: `verify` False (insecure), True
    or None (ca_bundle) or a CA file or directory; `cert` a client certificate file, or
    (cert, key)."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        where = verify if isinstance(verify, str) else ca_bundle
        if os.path.isdir(where):  # requests takes a directory of hashed certificates too
            context = ssl.create_default_context(capath=where)
        else:
            context = ssl.create_default_context(cafile=where)
    if isinstance(cert, tuple | list):
        context.load_cert_chain(cert[0], cert[1])
    elif cert:
        context.load_cert_chain(cert)
    return context


def _close_all(connections: list[http.client.HTTPConnection]) -> None:
    for connection in connections:
        connection.close()


def _set_timeout(connection: http.client.HTTPConnection, timeout: float) -> None:
    """The timeout of the connection's next request: its connecting and, on a kept-alive
    socket, each wait for the server."""
    connection.timeout = timeout
    if connection.sock is not None:
        connection.sock.settimeout(timeout)


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection was closed (or sent something unasked): its socket is
    readable, or gone."""
    sock = connection.sock
    if sock is None:
        return True
    poller = select.poll()  # not select.select: no limit on the descriptor's number
    poller.register(sock, select.POLLIN)
    try:
        return bool(poller.poll(0))
    except OSError:
        return True


def _proxy_authorization(proxy: urllib.parse.SplitResult | None) -> dict[str, str]:
    """Basic credentials of a proxy URL's user:password@, as urllib3 sent them."""
    if proxy is None or proxy.username is None:
        return {}
    user = urllib.parse.unquote(proxy.username)
    password = urllib.parse.unquote(proxy.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Proxy-Authorization": f"Basic {token}"}
