"""A threaded WSGI server (cheroot) for `inspector api` and `inspector all`, set up so that
its answers are the API's: cheroot's own refusals (a malformed request line or header,
headers too large) are in the API's error format with a request id and the version
headers; a request body's Content-Length is judged by inspector.api.bodies (cheroot only
refuses several that differ); an answer saying `Connection: close` closes the
connection (the rest of a refused body is never read as the next request). A connection
takes a request thread only once it sends something, and at most TIMEOUT seconds of
silence while its request is read: clients slow to send theirs leave the others served.

Production deployments may run `inspector.api.wsgi:application` under gunicorn instead.
"""

import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any
from wsgiref.types import WSGIApplication

from cheroot import errors as cheroot_errors
from cheroot import makefile as cheroot_makefile
from cheroot import server as cheroot_server
from cheroot import wsgi
from oslo_context import context as oslo_context

from inspector.api import errors, request_ids, versions
from inspector.lifecycle import Lifecycle

if TYPE_CHECKING:
    from _typeshed import OptExcInfo


LOG = logging.getLogger(__name__)

#: Request threads per API process (`[api] threads`' default).
THREADS = 16
#: Threads beyond `[api] threads`: a client that sent part of its request holds a thread
#: while the rest is read, so this many slow clients leave `[api] threads` to the others.
SLOW_CLIENT_THREADS = 48
#: Seconds a connection may stay silent while its request is read (request line,
#: headers, body), and idle between two requests, before the server gives up on it.
TIMEOUT = 5
#: Connections the kernel queues for the server to accept (cheroot's default, 5, had a
#: burst of new connections wait for the client's SYN retries, seconds).
BACKLOG = 128
#: Bytes of a request line and its headers; more is a 414 or a 413.
MAX_HEADER_SIZE = 64 * 1024
#: Bytes a chunk-size line may take (its hexadecimal size, extensions, CRLF), counted
#: with the chunks against a chunked body's limit before a chunk is read.
MAX_SIZE_LINE = 64


def chunks(stream: object, limit: int) -> Iterator[bytes] | None:
    """The chunks of a chunked body as cheroot decodes them, one at a time, a chunk that
    would take the body (with `limit` bytes of size lines) past `limit` refused before it
    is read; None when `stream` is not cheroot's chunked reader (gunicorn's, a test's).

    cheroot's own `ChunkedRFile.read(n)` copies what it holds on every call: one large
    chunk read n bytes at a time costs its size squared (a 60 MB chunk took 27 s). Its
    `_fetch`, `buffer` and `maxlen` are private: this is the one place that uses them,
    and tests/unit/test_api_hostile_framing.py fails if cheroot changes them."""
    if not isinstance(stream, cheroot_server.ChunkedRFile):
        return None
    fetch = getattr(stream, "_fetch", None)
    if fetch is None or not isinstance(getattr(stream, "buffer", None), bytes):
        return None
    stream.maxlen = min(stream.maxlen or limit, limit)

    def decoded() -> Iterator[bytes]:
        while True:
            if not stream.buffer:
                fetch()
                if not stream.buffer:
                    return
            chunk, stream.buffer = stream.buffer, b""
            yield chunk

    return decoded()


class _Lengths(dict[bytes, bytes]):
    """A header dict that keeps every Content-Length value set in it (cheroot's reader
    keeps the last one)."""

    def __init__(self) -> None:
        super().__init__()
        self.lengths: list[bytes] = []

    def __setitem__(self, key: bytes, value: bytes) -> None:
        if key == b"Content-Length":
            self.lengths.append(value)
        super().__setitem__(key, value)


class _Request(cheroot_server.HTTPRequest):
    """cheroot's request: Content-Length values that differ are refused (RFC 9112: an
    unrecoverable error), its own answers are the API's."""

    _read_headers = cheroot_server.HTTPRequest.header_reader

    def header_reader(self, rfile: object, hdict: dict[bytes, bytes]) -> dict[bytes, bytes]:
        seen = _Lengths()
        self._read_headers(rfile, seen)
        if len(set(seen.lengths)) > 1:
            raise ValueError("Several Content-Length headers with different values")
        try:  # cheroot reads it with int(): a message of its own otherwise
            int(seen.lengths[-1] if seen.lengths else 0)
        except ValueError:
            raise ValueError(errors.INVALID_LENGTH) from None
        hdict.update(seen)
        return hdict

    def send_headers(self) -> None:
        """The head, kept back to leave with the body's first bytes (see _Writer)."""
        wfile = self.conn.wfile
        if isinstance(wfile, _Writer):
            wfile.hold_next = True
        super().send_headers()

    def respond(self) -> None:
        try:
            super().respond()
        finally:
            wfile = self.conn.wfile
            if isinstance(wfile, _Writer):
                wfile.hold_next = False
                wfile.release()

    def simple_response(self, status: str | bytes | int, msg: str = "") -> None:
        """cheroot's refusals (then it closes the connection), in the API's format."""
        code = int(str(status)[:3])
        if code in (413, 414) and self.response_protocol != "HTTP/1.1":
            code = 400  # as cheroot: HTTP/1.0 has neither
        line, headers, body = errors.plain_answer(code, str(msg) or str(status)[4:])
        versions.stamped(headers, None)
        request_id = oslo_context.generate_request_id()
        headers += [(request_ids.ANSWER_HEADER, request_id), ("Connection", "close")]
        self.close_connection = True
        head = "".join(f"{name}: {value}\r\n" for name, value in headers)
        text = f"{self.server.protocol} {line}\r\n{head}\r\n"
        LOG.debug("HTTP %d to a request the server refused (req %s): %s", code, request_id, msg)
        try:
            self.conn.wfile.write(text.encode("latin-1") + body)
        except OSError as exc:
            if exc.args[0] not in cheroot_errors.socket_errors_to_ignore:
                raise


class _Writer(cheroot_makefile.StreamWriter):
    """cheroot's socket writer, which keeps an answer's head back until its body's first
    bytes (or the answer's end) so that both leave in one send. cheroot sends them apart:
    a process killed between the two sends left a client with a head and no body
    (IncompleteRead), which no proxy can retry once an answer has begun; killed before
    the one send, the proxy sees no answer at all and retries the request elsewhere."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold_next = False
        self.head = b""

    def write(self, val: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if self.hold_next:
            self.hold_next = False
            self.head += bytes(val)
            return len(val)
        if self.head:
            head, self.head = self.head, b""
            super().write(head + bytes(val), *args, **kwargs)
            return len(val)
        return super().write(val, *args, **kwargs)

    def release(self) -> None:
        """Send a head still kept back (an answer without a body)."""
        if self.head:
            head, self.head = self.head, b""
            super().write(head)


class _Connection(cheroot_server.HTTPConnection):
    RequestHandlerClass = _Request
    #: Whether it was handed to a request thread yet (see _Server.process_conn).
    heard = False

    def __init__(self, server: Any, sock: Any, makefile: Any = cheroot_makefile.MakeFile) -> None:
        super().__init__(server, sock, makefile)
        self.wfile = _Writer(sock, "wb", self.wbufsize)


class _Gateway(wsgi.Gateway_10):
    """WSGI 1.0, with an answer's `Connection: close` honoured: cheroot would otherwise
    read the rest of a refused body (or try to) and go on with the connection."""

    def start_response(
        self,
        status: str,
        headers: list[tuple[str, str]],
        exc_info: "OptExcInfo | None" = None,
    ) -> Callable[[bytes], object]:
        write = super().start_response(status, headers, exc_info)
        if any(k.lower() == "connection" and v.lower() == "close" for k, v in headers):
            self.req.close_connection = True
        return write


class _Server(wsgi.Server):
    ConnectionClass = _Connection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gateway = _Gateway

    def process_conn(self, conn: _Connection) -> None:
        """A new connection waits with the idle ones until it sends something, instead of
        holding a request thread while it is silent (cheroot hands it one at once)."""
        if not conn.heard:
            conn.heard = True
            self.put_conn(conn)
            return
        super().process_conn(conn)

    def error_log(self, msg: str = "", level: int = logging.INFO, traceback: bool = False) -> None:
        """cheroot's complaints through our logging: one line; the stack of an unexpected
        error (level ERROR) too, of a client's (a socket error) at debug level only."""
        stack = traceback and (level >= logging.ERROR or LOG.isEnabledFor(logging.DEBUG))
        LOG.log(level, "HTTP server: %s", msg, exc_info=stack)


class Server:
    """Listens at once on construction (so the port is known), serves until stopped.

    `threads` request threads run the application (with SLOW_CLIENT_THREADS more for
    slow clients); `timeout` is TIMEOUT's. A request body's size is checked by
    inspector.api.bodies, per route."""

    def __init__(
        self,
        app: WSGIApplication,
        host: str,
        port: int,
        threads: int = THREADS,
        timeout: float = TIMEOUT,
    ) -> None:
        self.cheroot = _Server(
            (host, port),
            app,
            numthreads=threads + SLOW_CLIENT_THREADS,
            timeout=timeout,
            request_queue_size=BACKLOG,
        )
        # No Content-Length check of cheroot's own: bodies.BoundedBodies answers it.
        self.cheroot.max_request_body_size = 0
        self.cheroot.max_request_header_size = MAX_HEADER_SIZE
        self.cheroot.prepare()
        self.host, self.port = self.cheroot.bind_addr[:2]
        self._thread = threading.Thread(target=self.cheroot.serve, name="api-server", daemon=True)

    def start(self) -> None:
        LOG.info("API listening on http://%s:%s", self.host, self.port)
        self._thread.start()

    def stop(self) -> None:
        self.cheroot.stop()
        self._thread.join(timeout=10)

    def serve_until(self, lifecycle: Lifecycle) -> None:
        """Serve until the shutdown flag is set or the server thread dies."""
        self.start()
        while not lifecycle.wait(0.5):
            if not self._thread.is_alive():
                lifecycle.stop("the API server stopped unexpectedly", exit_status=1)
        self.stop()
