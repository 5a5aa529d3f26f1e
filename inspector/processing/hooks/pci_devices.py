"""The pci_devices hook: a capability per configured alias, counting the matching PCI
devices of the data's pci_devices list.

Options: [pci_devices] alias (inspector/conf/pci_devices.py), JSON strings as in
ironic-inspector; an invalid one is logged and ignored, as ironic-inspector does.
"""

import collections
import json
import logging
from collections.abc import Iterable

from oslo_config import cfg

from inspector.processing.context import ProcessingContext
from inspector.processing.hooks.base import ProcessingHook

LOG = logging.getLogger(__name__)

_ALIAS_KEYS = {"vendor_id", "product_id", "name"}


def parse_aliases(entries: Iterable[str]) -> dict[tuple[str, str], str]:
    """(vendor_id, product_id) -> capability name, from the alias option's JSON strings."""
    aliases = {}
    for entry in entries:
        try:
            parsed = json.loads(entry)
        except ValueError as exc:
            LOG.error("Error parsing [pci_devices] alias %r: %s", entry, exc)
            continue
        if not isinstance(parsed, dict) or set(parsed) != _ALIAS_KEYS:
            LOG.error(
                "[pci_devices] alias %r must have exactly the keys vendor_id, product_id and name",
                entry,
            )
            continue
        aliases[(str(parsed["vendor_id"]), str(parsed["product_id"]))] = str(parsed["name"])
    return aliases


class PciDevicesHook(ProcessingHook):
    """Capabilities <alias name>:<count> for the PCI devices the aliases name."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.aliases = parse_aliases(conf.pci_devices.alias)

    def before_update(self, context: ProcessingContext) -> None:
        devices = context.data.get("pci_devices")
        if devices is None:
            if self.aliases:
                LOG.warning("[node %s] no PCI devices in the data", context.node.uuid)
            return
        counts = collections.Counter(
            (str(dev.get("vendor_id")), str(dev.get("product_id")))
            for dev in devices
            if isinstance(dev, dict)
        )
        found = {
            self.aliases[ids]: str(count) for ids, count in counts.items() if ids in self.aliases
        }
        if found:
            LOG.info("[node %s] PCI devices found: %s", context.node.uuid, found)
            context.changes.capabilities.update(found)
