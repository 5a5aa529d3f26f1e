"""The raid_device hook: learn the root device of a node whose RAID volume is created
between two introspections, from the disk serial that appeared in between.

The first run stores the serials in node.extra["block_devices"]; the next run, when
exactly one new serial appears, sets properties.root_device and removes that key.
"""

import logging
from typing import Any

from inspector.processing.context import ProcessingContext
from inspector.processing.hooks.base import ProcessingHook

LOG = logging.getLogger(__name__)


class RaidDeviceDetection(ProcessingHook):
    """root_device = {"serial": the one new disk serial}, as ironic-inspector's hook."""

    def before_update(self, context: ProcessingContext) -> None:
        node = context.node
        current = serials(context.data)
        if not current:
            LOG.warning("[node %s] no block device serials from the ramdisk", node.uuid)
            return
        if "root_device" in node.properties:
            LOG.info("[node %s] root device is already known", node.uuid)
            return
        previous = node.extra.get("block_devices")
        if not isinstance(previous, dict):
            context.changes.patch.append(
                {"op": "add", "path": "/extra/block_devices", "value": {"serials": current}}
            )
            return
        new = [serial for serial in current if serial not in (previous.get("serials") or ())]
        if len(new) != 1:
            LOG.warning(
                "[node %s] root device not identified: %d new devices",
                node.uuid,
                len(new),
            )
            return
        context.changes.patch.append({"op": "remove", "path": "/extra/block_devices"})
        context.changes.properties["root_device"] = {"serial": new[0]}


def serials(data: dict[str, Any]) -> list[str]:
    """Disk serials of the inventory, else of the old block_devices key."""
    if "inventory" in data:
        disks = (data["inventory"] or {}).get("disks") or ()
        return [disk["serial"] for disk in disks if disk.get("serial")]
    return list((data.get("block_devices") or {}).get("serials") or ())
