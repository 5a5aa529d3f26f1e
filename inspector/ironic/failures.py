"""Which Ironic failures are worth another attempt, and the InspectorError each one becomes.

Pure: it only reads openstacksdk and keystoneauth exceptions, it never retries or waits.
"""

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions

from inspector.errors import BadRequest, Conflict, InspectorError, NotFound

#: Every exception the two libraries raise; nothing else is translated.
LIBRARY_ERRORS = (sdk_exceptions.SDKException, ks_exceptions.ClientException)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status Ironic (or Keystone) answered, None when there was no answer."""
    if isinstance(exc, sdk_exceptions.HttpException):
        return exc.status_code
    if isinstance(exc, ks_exceptions.HttpError):
        return exc.http_status
    return None


def detail_of(exc: BaseException) -> str:
    """Ironic's own message when it sent one, else the library's."""
    if isinstance(exc, sdk_exceptions.HttpException) and exc.details:
        return str(exc.details)
    return str(exc) or type(exc).__name__


def is_node_locked(exc: BaseException) -> bool:
    """409 NodeLocked: a conductor holds the node for a moment; the same call succeeds later.

    Ironic tells it from other conflicts (a MAC already used, a name taken) only by its text:
    "Node X is locked by host Y, please retry after the current operation is completed."
    """
    return status_of(exc) == 409 and "locked by" in detail_of(exc)


def retry_reason(exc: BaseException) -> str | None:
    """Why another attempt may succeed, or None when it cannot."""
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
    if status == 404 or isinstance(exc, sdk_exceptions.NotFoundException):
        return NotFound(f"Ironic: {detail}")
    if status == 409:
        return Conflict(f"Ironic refused to {what}: {detail}")
    if status in (401, 403):
        # Our credentials, not the caller's: a 500 of ours, and not worth a retry.
        return InspectorError(f"Ironic refused our credentials to {what}: HTTP {status} {detail}")
    if status is not None and 400 <= status < 500:
        return BadRequest(f"Ironic refused to {what}: {detail}")
    return InspectorError(f"Ironic call failed ({what}): {detail}")
