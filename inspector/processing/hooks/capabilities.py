"""The capabilities hook: boot_mode and CPU-flag capabilities from the inventory.

Options: [capabilities] boot_mode, cpu_flags (inspector/conf/capabilities.py).
"""

import logging
from typing import Any

from inspector.processing.context import ProcessingContext
from inspector.processing.hooks.base import ProcessingHook, inventory

LOG = logging.getLogger(__name__)


class CapabilitiesHook(ProcessingHook):
    """Merge boot_mode (when enabled) and CPU flag capabilities into the node's."""

    def before_update(self, context: ProcessingContext) -> None:
        found = inventory(context.data)
        options = context.conf.capabilities
        capabilities: dict[str, str] = {}
        if options.boot_mode:
            capabilities.update(_boot_mode(found, context.node.uuid))
        capabilities.update(_cpu_flags(found, options.cpu_flags, context.node.uuid))
        LOG.debug("[node %s] capabilities found: %s", context.node.uuid, capabilities)
        context.changes.capabilities.update(capabilities)


def _boot_mode(found: dict[str, Any], node_uuid: str) -> dict[str, str]:
    boot_mode = (found.get("boot") or {}).get("current_boot_mode")
    if boot_mode is None:
        LOG.warning("[node %s] no boot mode information in the inventory", node_uuid)
        return {}
    return {"boot_mode": str(boot_mode)}


def _cpu_flags(found: dict[str, Any], mapping: dict[str, str], node_uuid: str) -> dict[str, str]:
    flags = (found.get("cpu") or {}).get("flags")
    if not flags:
        LOG.warning("[node %s] no CPU flags in the inventory", node_uuid)
        return {}
    present = set(flags)
    return {name: "true" for flag, name in mapping.items() if flag in present}
