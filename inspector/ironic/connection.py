"""The HTTP connection to Ironic, built from the [ironic] keystoneauth options.

Owns the transport: keystoneauth (the [ironic] auth and session options) says where
Ironic is (the catalog or endpoint_override, then Ironic's version document) and which
headers authenticate a request; the request context (inspector.request_context) which
global request id a request passes on; `transport.Origin` keeps the connections that
carry them. One request per send, never retried here: the client's retry policy
([ironic] max_retries, retry_interval) is the only one. A 401 is sent once more with a
new token, as keystoneauth's own session does.

Not openstacksdk's proxy on a requests session: that stack cost 1.2-1.9 ms of CPU per
call against 0.4-0.9 ms on urllib3, and 0.2-0.5 ms on http.client since; a worker makes
five calls per introspection.
"""

import dataclasses
import json
import logging
import os
import ssl
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

import certifi
import urllib3
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading, noauth
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from inspector import __version__, deadlines, request_context
from inspector.conf.ironic import GROUP
from inspector.errors import ConfigError
from inspector.ironic import transport
from inspector.ironic.failures import Unreachable

LOG = logging.getLogger(__name__)

#: The Bare Metal API microversion of every request. What we use exists by 1.34 (port
#: physical_network); 1.81 (Ironic 2023.1, node inventory) is what our tests and the real
#: Ironic peers run, and pinning it keeps replies the same whatever Ironic's maximum.
API_VERSION = "1.81"
#: Seconds a request may take when [ironic] timeout is unset: a hung Ironic must not hang
#: a worker for ever.
DEFAULT_TIMEOUT = 30.0
#: Connections kept open to Ironic: more than a worker's or the API's threads call at once.
POOL_SIZE = 32
#: Headers of every request besides authentication and the body's type.
HEADERS = {
    "Accept": "application/json",
    "X-OpenStack-Ironic-API-Version": API_VERSION,
    "OpenStack-API-Version": f"baremetal {API_VERSION}",
    "User-Agent": f"inspector/{__version__}",
}


@dataclasses.dataclass(frozen=True)
class Reply:
    """Ironic's answer: its status, its body and the request id it gave the call."""

    status: int
    body: bytes
    request_id: str | None = None


class Connection:
    """Sends requests to Ironic's v1 API. Thread-safe; no I/O until the first send."""

    def __init__(
        self,
        session: ks_session.Session,
        *,
        endpoint_override: str | None = None,
        interface: Any = None,
        region_name: str | None = None,
        service_name: str | None = None,
    ) -> None:
        self.session = session
        self._where: dict[str, Any] = {
            "service_type": "baremetal",
            "interface": interface or "public",
            "region_name": region_name,
            "service_name": service_name,
            "endpoint_override": endpoint_override,
            "min_version": "1",
            "max_version": "1.latest",
        }
        self._timeout = float(session.timeout or DEFAULT_TIMEOUT)
        self._lock = threading.Lock()
        self._path = ""
        self._origin: transport.Origin | None = None

    def send(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Reply:
        """One request: `path` under Ironic's /v1, `body` sent as JSON. Raises Unreachable
        when no answer came, keystoneauth's exceptions when authentication or the
        version document failed; an HTTP error is a Reply like any other."""
        origin, base = self._resolved()
        target = base + path
        if params:
            target += "?" + urllib.parse.urlencode(params)
        payload = None if body is None else json.dumps(body).encode()
        reply = self._request(origin, method, target, payload)
        if reply.status == 401 and self.session.invalidate():
            # The token expired (or was revoked): once more with a new one.
            reply = self._request(origin, method, target, payload)
        return reply

    def _request(
        self, origin: transport.Origin, method: str, target: str, payload: bytes | None
    ) -> Reply:
        # The global request id of the request this call is made for (the API's, or the
        # queued one a worker handles): Ironic's log lines for the call show it.
        headers = {
            **HEADERS,
            **(self.session.get_auth_headers() or {}),
            **request_context.outgoing_headers(),
        }
        if payload is not None:
            headers["Content-Type"] = "application/json"
        # Within an API request, no longer than what its deadline leaves.
        timeout = deadlines.cap(self._timeout, "Ironic")
        started = time.monotonic()
        try:
            status, body, reply_headers = origin.request(method, target, payload, headers, timeout)
        except ssl.SSLError as exc:
            # A certificate refused, a protocol mismatch: sending again will not help.
            raise Unreachable(f"TLS failed: {exc}", retriable=False) from exc
        except TimeoutError as exc:
            raise Unreachable(f"{method} {target}: timed out after {timeout:.1f} s") from exc
        except transport.FAILURES as exc:
            raise Unreachable(f"{method} {target}: {exc or type(exc).__name__}") from exc
        if LOG.isEnabledFor(logging.DEBUG):
            LOG.debug(
                "%s %s: HTTP %d in %.3f s", method, target, status, time.monotonic() - started
            )
        return Reply(status, body, reply_headers.get("x-openstack-request-id"))

    def _resolved(self) -> tuple[transport.Origin, str]:
        """The connections that reach Ironic and its v1 path, found on first use."""
        with self._lock:
            if self._origin is None:
                try:
                    data = self.session.get_endpoint_data(**self._where)
                except OSError as exc:
                    # requests checks the CA bundle and client certificate files before
                    # sending the version discovery (its socket errors come wrapped
                    # in keystoneauth's exceptions): a file that is not there.
                    raise Unreachable(f"TLS settings: {exc}", retriable=False) from exc
                if data is None or not data.url:
                    raise ks_exceptions.EndpointNotFound(
                        "no baremetal endpoint in the catalog for "
                        f"interface {self._where['interface']}"
                    )
                endpoint = data.url.rstrip("/")
                self._path = urllib.parse.urlsplit(endpoint).path
                try:
                    self._origin = _origin(self.session, endpoint, self._timeout)
                except OSError as exc:  # ssl.SSLError too
                    # A CA file or client certificate that cannot be read or used.
                    raise Unreachable(f"TLS settings: {exc}", retriable=False) from exc
            return self._origin, self._path


def connect(conf: cfg.ConfigOpts) -> Connection:
    """A Connection to the Ironic that conf names. No I/O yet.

    `auth_type = none` with `endpoint_override` reaches a standalone Ironic; any other
    keystoneauth plugin (password, v3applicationcredential, http_basic...) finds Ironic
    in the catalog unless endpoint_override says where it is.
    """
    group = conf[GROUP]
    try:
        auth = loading.load_auth_from_conf_options(conf, GROUP)
    except (ks_exceptions.ClientException, cfg.Error) as exc:
        raise ConfigError(f"[{GROUP}] authentication options: {exc}") from exc
    if auth is None:
        if not group.endpoint_override:
            raise ConfigError(
                f"[{GROUP}] sets neither auth_type nor endpoint_override: set auth_type = none "
                "and endpoint_override for a standalone Ironic, or keystone credentials"
            )
        auth = noauth.NoAuth()
    try:
        session = loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    except (ks_exceptions.ClientException, cfg.Error) as exc:
        raise ConfigError(f"[{GROUP}] session options: {exc}") from exc
    if session.timeout is None:
        session.timeout = DEFAULT_TIMEOUT
    if session.verify is False:
        # [ironic] insecure is the operator's choice: keystoneauth's requests (the version
        # discovery) would warn of it at every first call.
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    return Connection(
        session,
        endpoint_override=group.endpoint_override,
        interface=group.valid_interfaces or None,
        region_name=group.region_name,
        service_name=group.service_name,
    )


def _origin(session: ks_session.Session, endpoint: str, timeout: float) -> transport.Origin:
    """Connections as keystoneauth's requests session would make them: its TLS settings
    ([ironic] cafile, insecure, certfile, keyfile), the CA bundle requests would use,
    and the environment's proxy for Ironic's address unless no_proxy names it."""
    context = None
    if endpoint.startswith("https:"):
        bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
        context = transport.tls_context(session.verify, session.cert, bundle or certifi.where())
    where = urllib.parse.urlsplit(endpoint)
    proxy = urllib.request.getproxies().get(where.scheme)
    if proxy and urllib.request.proxy_bypass(where.hostname or ""):
        proxy = None
    return transport.Origin(
        endpoint, timeout=timeout, context=context, proxy=proxy or None, keep=POOL_SIZE
    )
