"""The id an API request that changes a node is recorded under: the one the proxy or the
client sent (X-Request-ID, then X-OpenStack-Request-ID), when it is well-formed.

HAProxy sets X-Request-ID on every request it passes (etc/inspector/haproxy.cfg), the
same on each of its retries of one request: an attempt sent again is recognised by it
(intents.arrive). An id that is not well-formed is ignored and the request gets a new
one, as a request without any does; it is never an error.
"""

import re
from collections.abc import Mapping

#: The headers read, in this order: the proxy's (it replaces whatever the client sent),
#: then the client's own (keystoneauth's global request id: "req-" and a UUID).
HEADERS = ("X-Request-ID", "X-OpenStack-Request-ID")
#: Letters, digits, '-', '_' and ':', 16 to 40 of them: a UUID, with or without "req-".
#: No '.' (follow-up requests are "<id>.<event>"), nothing a log line or a database
#: key could be confused by, and at most the 40 characters a follow-up id keeps.
WELL_FORMED = re.compile(r"[A-Za-z0-9_:-]{16,40}")


def incoming(headers: Mapping[str, str]) -> str | None:
    """The first well-formed id of HEADERS; None when there is none."""
    for name in HEADERS:
        value = headers.get(name)
        if value is not None and WELL_FORMED.fullmatch(value.strip()):
            return value.strip()
    return None
