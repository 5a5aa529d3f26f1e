"""The BMC addresses of a node, resolved from its driver_info as ironic-inspector does.

Pure apart from name resolution, which is injectable; never talks to Ironic.
"""

import ipaddress
import logging
import socket
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

LOG = logging.getLogger(__name__)

#: driver_info fields holding a BMC's address that do not end in `_address`.
EXTRA_FIELDS = ("drac_host",)
#: `*_address` fields that are IPMI bridging (IPMB) addresses, not network ones.
BRIDGING_FIELDS = frozenset({"ipmi_local_address", "ipmi_target_address", "ipmi_transit_address"})

Resolver = Callable[..., list]


def bmc_addresses(
    driver_info: Mapping[str, Any], *, resolve: Resolver = socket.getaddrinfo
) -> list[str]:
    """IP addresses (v4 and v6, no duplicates, in field order) of the node's BMC.

    Reads every `*_address` field (ipmi_address, redfish_address as a URL, drac_address,
    ilo_address, irmc_address...) and drac_host. Host names are resolved with `resolve`
    (socket.getaddrinfo's signature); names that do not resolve are skipped. Loopback
    addresses are skipped, as ironic-inspector does: nodes behind a virtual BMC on the
    conductor share 127.0.0.1 and cannot be told apart by it. A node with IPMI bridging
    has no usable BMC address of its own.
    """
    if str(driver_info.get("ipmi_bridging") or "no") != "no":
        return []
    fields = sorted(
        name
        for name in driver_info
        if (name.endswith("_address") and name not in BRIDGING_FIELDS) or name in EXTRA_FIELDS
    )
    found: list[str] = []
    for name in fields:
        value = driver_info[name]
        host = _host(value) if isinstance(value, str) else None
        if not host:
            continue
        for ip in _resolve(host, resolve):
            if ip.is_loopback:
                LOG.debug("Ignoring loopback BMC address %s (%s)", ip, name)
            elif str(ip) not in found:
                found.append(str(ip))
    return found


def _host(value: str) -> str | None:
    """The host part of an address: a URL's host, [v6] without brackets, host:port's host."""
    value = value.strip()
    if "//" in value:
        try:
            host = urllib.parse.urlparse(value).hostname
        except ValueError:
            return None
        return urllib.parse.unquote(host) if host else None
    if value.startswith("["):
        return value[1:].split("]", 1)[0] or None
    if value.count(":") == 1:
        return value.split(":", 1)[0] or None
    return value or None


def _resolve(host: str, resolve: Resolver) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        return [ipaddress.ip_address(host.split("%", 1)[0])]
    except ValueError:
        pass
    try:
        infos = resolve(host, None, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        LOG.warning("Cannot resolve BMC host name %s: %s", host, exc)
        return []
    ips = []
    for _family, _type, _proto, _canonname, sockaddr in infos:
        try:
            ips.append(ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]))
        except ValueError:
            continue
    return ips
