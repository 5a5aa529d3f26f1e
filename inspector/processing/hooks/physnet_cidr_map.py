"""The physnet_cidr_map hook: physical_network of a port from the subnet of its
interface's IP address.

Options: [port_physnet] cidr_map (inspector/conf/port_physnet.py), checked at start-up.
"""

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from oslo_config import cfg

from inspector.errors import ConfigError
from inspector.processing.context import ProcessingContext
from inspector.processing.hooks import ports as port_view
from inspector.processing.hooks.base import ProcessingHook, inventory

LOG = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_cidr_map(items: Iterable[str]) -> list[tuple[Network, str]]:
    """CIDR:PHYSNET items -> (network, physnet) pairs; ConfigError naming a bad item."""
    result = []
    for item in items:
        cidr, _, physnet = item.rpartition(":")
        try:
            network = ipaddress.ip_network(cidr.strip())
        except ValueError as exc:
            raise ConfigError(f"[port_physnet] cidr_map: invalid item {item!r}: {exc}") from exc
        if not physnet.strip():
            raise ConfigError(f"[port_physnet] cidr_map: item {item!r} has no physical network")
        result.append((network, physnet.strip()))
    return result


class PhysnetCidrMapHook(ProcessingHook):
    """physical_network of existing and new ports, from [port_physnet] cidr_map."""

    dependencies = ("validate_interfaces",)

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.cidr_map = parse_cidr_map(conf.port_physnet.cidr_map)

    def before_update(self, context: ProcessingContext) -> None:
        all_interfaces = context.data.get("all_interfaces") or {}
        existing, added = port_view.existing(context), port_view.added(context)
        overwrite = context.conf.processing.overwrite_existing
        for iface in inventory(context.data)["interfaces"]:
            name = iface.get("name")
            if name not in all_interfaces:
                continue
            physnet = self.physnet(iface)
            mac = all_interfaces[name]["mac"]
            if physnet is None:
                continue
            if mac in added:
                added[mac]["physical_network"] = physnet
                continue
            port = existing.get(mac)
            if port is None or port.physical_network == physnet:
                continue
            if port.physical_network and not overwrite:
                continue
            LOG.info("[node %s] port %s: physical network %s", context.node.uuid, mac, physnet)
            port_view.record_patch(
                context, port.uuid, {"op": "add", "path": "/physical_network", "value": physnet}
            )

    def physnet(self, iface: dict[str, Any]) -> str | None:
        """The physical network of the first of the interface's addresses that maps to one."""
        for key in ("ipv4_address", "ipv6_address"):
            value = iface.get(key)
            if not isinstance(value, str) or not value:
                continue
            try:
                address = ipaddress.ip_address(value.split("%", 1)[0])
            except ValueError:
                continue
            for network, physnet in self.cidr_map:
                if address in network:
                    return physnet
        return None
