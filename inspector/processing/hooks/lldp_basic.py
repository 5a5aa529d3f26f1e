"""The lldp_basic hook: each interface's LLDP TLVs (inventory lldp, or the data's
lldp_raw) parsed into data["all_interfaces"][name]["lldp_processed"], for rules and the
local_link_connection hook.
"""

import logging

from inspector.processing.context import ProcessingContext
from inspector.processing.hooks import lldp
from inspector.processing.hooks.base import ProcessingHook, inventory

LOG = logging.getLogger(__name__)


class LLDPBasicProcessingHook(ProcessingHook):
    """Basic management, 802.1Q and 802.3 TLVs -> all_interfaces[name]["lldp_processed"]."""

    dependencies = ("validate_interfaces",)

    def before_update(self, context: ProcessingContext) -> None:
        data = context.data
        lldp_raw = data.get("lldp_raw") or {}
        all_interfaces = data.get("all_interfaces") or {}
        for iface in inventory(data)["interfaces"]:
            name = iface.get("name")
            tlvs = lldp_raw.get(name) or iface.get("lldp")
            if tlvs is None:
                LOG.debug("[node %s] no LLDP data for interface %s", context.node.uuid, name)
                continue
            processed = lldp.parse(tlvs)
            if processed and name in all_interfaces:
                all_interfaces[name]["lldp_processed"] = processed
