"""The local_link_connection hook: switch_id (chassis MAC), port_id and switch_info
(system name) from LLDP into the local_link_connection of the node's ports, existing
(a port patch) and new (the new port's fields).

Uses lldp_basic's lldp_processed when that hook ran before, else parses the TLVs itself.
"""

import logging
from typing import Any

from inspector.ironic import IronicPort
from inspector.macs import parse_mac
from inspector.processing.context import ProcessingContext
from inspector.processing.hooks import lldp
from inspector.processing.hooks import ports as port_view
from inspector.processing.hooks.base import ProcessingHook, inventory

LOG = logging.getLogger(__name__)

#: Fields only filled in when the port has none (an operator's switch_info names the
#: switch in the ML2 driver's configuration and must not be replaced by the LLDP name).
_FILL_ONLY = {"switch_info"}


class GenericLocalLinkConnectionHook(ProcessingHook):
    """local_link_connection of the node's ports from the LLDP their interfaces saw."""

    dependencies = ("validate_interfaces",)

    def before_update(self, context: ProcessingContext) -> None:
        data = context.data
        lldp_raw = data.get("lldp_raw") or {}
        all_interfaces = data.get("all_interfaces") or {}
        existing, added = port_view.existing(context), port_view.added(context)
        for iface in inventory(data)["interfaces"]:
            name = iface.get("name")
            if name not in all_interfaces:
                continue
            tlvs = lldp_raw.get(name) or iface.get("lldp")
            if tlvs is None:
                continue
            processed = all_interfaces[name].get("lldp_processed") or lldp.parse(tlvs)
            link = link_fields(processed, context.node.uuid)
            mac = all_interfaces[name]["mac"]
            if not link:
                continue
            if mac in added:
                added[mac].setdefault("local_link_connection", {}).update(link)
            elif mac in existing:
                _patch(context, existing[mac], link)


def link_fields(processed: dict[str, Any], node_uuid: str) -> dict[str, str]:
    """switch_id, port_id and switch_info from processed LLDP values (when present)."""
    link = {}
    chassis = processed.get(lldp.CHASSIS_ID)
    if chassis:
        if parse_mac(chassis):
            link["switch_id"] = chassis
        else:
            LOG.info("[node %s] switch_id skipped, chassis ID %s is not a MAC", node_uuid, chassis)
    if processed.get(lldp.PORT_ID):
        link["port_id"] = processed[lldp.PORT_ID]
    if processed.get(lldp.SYSTEM_NAME):
        link["switch_info"] = processed[lldp.SYSTEM_NAME]
    return link


def _patch(context: ProcessingContext, port: IronicPort, link: dict[str, str]) -> None:
    overwrite = context.conf.processing.overwrite_existing
    for item, value in link.items():
        present = item in port.local_link_connection
        if present and (item in _FILL_ONLY or not overwrite):
            continue
        if port.local_link_connection.get(item) == value:
            continue
        port_view.record_patch(
            context,
            port.uuid,
            {"op": "add", "path": f"/local_link_connection/{item}", "value": value},
        )
