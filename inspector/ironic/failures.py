"""The failures of a call to Ironic: which are worth another attempt, and the
InspectorError each one becomes.

Pure: it defines the transport's exceptions and reads them and keystoneauth's (which
authentication and endpoint discovery raise); it never retries or waits.
"""

from keystoneauth1 import exceptions as ks_exceptions

from inspector.errors import BadRequest, Conflict, InspectorError, NotFound


class Unreachable(Exception):
    """No answer from Ironic: the connection failed, broke or timed out (retriable), or
    TLS refused it (not)."""

    def __init__(self, detail: str, *, retriable: bool = True) -> None:
        super().__init__(detail)
        self.retriable = retriable


class HttpError(Exception):
    """Ironic answered with an error status; `detail` is its own message."""

    def __init__(self, status: int, detail: str, request_id: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail
        self.request_id = request_id


class BadReply(Exception):
    """Ironic answered success with a body that is not JSON."""


#: Every exception a call may raise; nothing else is translated.
ERRORS = (Unreachable, HttpError, BadReply, ks_exceptions.ClientException)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status Ironic (or Keystone) answered, None when there was no answer."""
    if isinstance(exc, HttpError):
        return exc.status
    if isinstance(exc, ks_exceptions.HttpError):
        return exc.http_status
    return None


def detail_of(exc: BaseException) -> str:
    """Ironic's own message when it sent one, else the exception's."""
    if isinstance(exc, HttpError) and exc.detail:
        return exc.detail
    return str(exc) or type(exc).__name__


def is_node_locked(exc: BaseException) -> bool:
    """409 NodeLocked: a conductor holds the node for a moment; the same call succeeds later.

    Ironic tells it from other conflicts (a MAC already used, a name taken) only by its text:
    "Node X is locked by host Y, please retry after the current operation is completed."
    """
    return status_of(exc) == 409 and "locked by" in detail_of(exc)


def retry_reason(exc: BaseException) -> str | None:
    """Why another attempt may succeed, or None when it cannot."""
    if isinstance(exc, Unreachable):
        return f"cannot connect: {detail_of(exc)}" if exc.retriable else None
    if isinstance(exc, ks_exceptions.SSLError):
        return None
    if isinstance(exc, ks_exceptions.ConnectionError | ks_exceptions.DiscoveryFailure):
        # DiscoveryFailure: the first request of a connection reads Ironic's version
        # document, and that is what fails while Ironic is down.
        return f"cannot connect: {detail_of(exc)}"
    status = status_of(exc)
    if status is not None and status >= 500:
        return f"HTTP {status}: {detail_of(exc)}"
    if is_node_locked(exc):
        return f"node locked: {detail_of(exc)}"
    return None


def translate(exc: BaseException, what: str) -> InspectorError:
    """The error a caller sees for a failure that another attempt would not fix."""
    status = status_of(exc)
    detail = detail_of(exc)
    if status == 404:
        return NotFound(f"Ironic: {detail}")
    if status == 409:
        return Conflict(f"Ironic refused to {what}: {detail}")
    if status in (401, 403):
        # Our credentials, not the caller's: a 500 of ours, and not worth a retry.
        return InspectorError(f"Ironic refused our credentials to {what}: HTTP {status} {detail}")
    if status is not None and 400 <= status < 500:
        return BadRequest(f"Ironic refused to {what}: {detail}")
    return InspectorError(f"Ironic call failed ({what}): {detail}")
