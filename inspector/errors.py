"""The one exception hierarchy: every error carries its HTTP status and whether a retry may help.

Third-party exceptions are wrapped into these by the module that calls the library;
nothing outside that module sees a SQLAlchemy, tooz, kombu, keystoneauth or urllib3 error.
"""

from typing import Any


class InspectorError(Exception):
    """Root of all our errors."""

    #: HTTP status the API answers with when this error reaches it.
    http_status: int = 500
    #: True when the same request may succeed later (requeue with backoff).
    retryable: bool = False

    def __init__(self, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if http_status is not None:
            self.http_status = http_status


class ConfigError(InspectorError):
    """Invalid configuration: start-up stops with this message."""


class BadRequest(InspectorError):
    http_status = 400


class Unauthorized(InspectorError):
    """No or wrong credentials on a route that needs them."""

    http_status = 401


class Forbidden(InspectorError):
    """Valid credentials without the role the policy asks for."""

    http_status = 403


class NotFound(InspectorError):
    http_status = 404


class NotAcceptable(InspectorError):
    http_status = 406


class PayloadTooLarge(InspectorError):
    http_status = 413


class TooManyRequests(InspectorError):
    http_status = 429


class Conflict(InspectorError):
    http_status = 409


class InvalidTransition(Conflict):
    """The state machine refuses this event in this state."""


class NodeBusy(Conflict):
    """Another worker holds the node, or its version moved under us."""

    retryable = True


class ServiceUnavailable(InspectorError):
    """A backend (database, queue, DLM, Ironic) cannot be reached right now.

    `service` names the backend ("database", "queue", "DLM", "Ironic") when known: a
    process that gives up on it says which one failed.
    """

    http_status = 503
    retryable = True

    def __init__(self, message: str, *, service: str | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.service = service


class FirewallError(InspectorError):
    """A firewall command failed, timed out or could not be run; the message carries its
    stderr. The firewall manager answers it by closing the firewall (fail closed)."""

    retryable = True
