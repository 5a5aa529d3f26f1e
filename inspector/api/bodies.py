"""The one bounded reader of request bodies (WSGI middleware): a body over its route's
limit is a 413 before the application reads it, however it is framed (Content-Length or
chunked); a framing the server cannot decode, a Content-Length that is not a number, or
a body that stops before its Content-Length, is a 400. The body is read here, whole,
before the application runs. Never a 500, never more than the limit read.
"""

import io
import logging
from collections.abc import Iterable
from typing import BinaryIO
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from inspector.api import errors, server

LOG = logging.getLogger(__name__)

#: The route whose bodies carry ramdisk data (and logs): it has a limit of its own.
CONTINUE_PATH = "/v1/continue"
#: Bytes read at a time from a chunked body.
READ_SIZE = 64 * 1024
#: The longest Content-Length value taken as a number (20 digits pass 2**64).
MAX_LENGTH_DIGITS = 20
#: Chunks a body may come in: at least this many, and at most one per this many bytes
#: of its limit (each chunk costs the server a line to parse: a body of one-byte chunks
#: is five times its size on the wire and a thousand times the work).
MIN_CHUNKS = 1024
BYTES_PER_CHUNK = 4096


class BodyTooLarge(Exception):
    pass


class TooManyChunks(Exception):
    pass


def read_bounded(stream: BinaryIO, limit: int) -> bytes:
    """All of `stream` if it holds at most `limit` bytes; BodyTooLarge as soon as it
    holds more (having read at most `limit` + one piece), TooManyChunks when the server
    shows its chunks and there are more than the limit allows."""
    most = max(MIN_CHUNKS, limit // BYTES_PER_CHUNK)
    pieces = server.chunks(stream, limit + (most + 1) * server.MAX_SIZE_LINE)
    if pieces is None:
        pieces = iter(lambda: stream.read(READ_SIZE), b"")
    parts, size = [], 0
    for count, piece in enumerate(pieces, 1):
        size += len(piece)
        if size > limit:
            raise BodyTooLarge
        if count > most:
            raise TooManyChunks(most)
        parts.append(piece)
    return b"".join(parts)


class BoundedBodies:
    """Checks the framing and length of every request body and reads it (up to the limit)
    before the application sees it; it hands the body on, with its length."""

    def __init__(self, app: WSGIApplication, limit: int, continue_limit: int) -> None:
        self.app = app
        self.limit = limit
        self.continue_limit = continue_limit

    def limit_of(self, environ: WSGIEnvironment) -> int:
        path = environ.get("PATH_INFO", "").rstrip("/")
        return self.continue_limit if path.endswith(CONTINUE_PATH) else self.limit

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        refusal = self.refusal(environ)
        if refusal is not None:
            return refuse(start_response, *refusal)
        return self.app(environ, start_response)

    def refusal(self, environ: WSGIEnvironment) -> tuple[int, str] | None:
        """Why the body is refused (status, message), or None; a body it accepts is left
        in the environ, read, with its length."""
        length = environ.get("CONTENT_LENGTH")
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if length and chunked:  # which framing a proxy in front went by, no one knows
            return 400, "A request body cannot have both Content-Length and Transfer-Encoding"
        if length:
            if len(length) > MAX_LENGTH_DIGITS or not (length.isascii() and length.isdigit()):
                return 400, errors.INVALID_LENGTH
            limit = self.limit_of(environ)
            return (413, too_large(limit)) if int(length) > limit else take_sized(environ)
        return take_chunked(environ, self.limit_of(environ)) if chunked else None


def take_sized(environ: WSGIEnvironment) -> tuple[int, str] | None:
    """Read a body of CONTENT_LENGTH bytes into the environ, or say why not: it stopped
    before its length (the client hung up, or was silent past the server's timeout)."""
    length, stream = int(environ["CONTENT_LENGTH"]), environ["wsgi.input"]
    parts, size, why = [], 0, "the client closed its side"
    try:
        while size < length:
            piece = stream.read(min(READ_SIZE, length - size))
            if not piece:
                break
            parts.append(piece)
            size += len(piece)
    except OSError as exc:  # a timeout, a reset
        why = str(exc) or type(exc).__name__
    if size < length:
        LOG.warning(
            "The request body of %s %s from %s stopped short of its %d bytes (%d read): %s",
            environ.get("REQUEST_METHOD"),
            environ.get("PATH_INFO"),
            environ.get("REMOTE_ADDR"),
            length,
            size,
            why,
        )
        return 400, f"The request body stopped short of its Content-Length ({length} bytes)"
    environ["wsgi.input"] = io.BytesIO(b"".join(parts))
    environ["wsgi.input_terminated"] = True
    return None


def take_chunked(environ: WSGIEnvironment, limit: int) -> tuple[int, str] | None:
    """Read a chunked body into the environ (with its length), or say why not."""
    try:
        body = read_bounded(environ["wsgi.input"], limit)
    except BodyTooLarge:
        return 413, too_large(limit)
    except TooManyChunks as exc:
        # 413, not 400: the framing is valid, the work it asks for is not.
        return 413, (
            f"The chunked request body comes in more than {exc.args[0]} chunks; send it "
            "in fewer, larger chunks or with a Content-Length"
        )
    except Exception as exc:  # the server's chunk decoder: any framing error
        if "too large" in str(exc).lower():  # cheroot: past the server's maximum
            return 413, too_large(limit)
        LOG.debug("Malformed chunked body: %s: %s", type(exc).__name__, exc)
        return 400, "Malformed chunked request body"
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ["wsgi.input_terminated"] = True
    return None


def too_large(limit: int) -> str:
    return f"The request body is larger than this route's limit of {limit} bytes"


def refuse(start_response: StartResponse, status: int, message: str) -> list[bytes]:
    """An error answer in the API's format. The connection is closed after it: the
    rest of the body may still be on its way."""
    line, headers, body = errors.plain_answer(status, message)
    start_response(line, [*headers, ("Connection", "close")])
    return [body]
