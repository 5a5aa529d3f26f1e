"""The accelerators hook: PCI devices of the data found in a list of known accelerator
devices become properties["accelerators"] (each with its pci_address).

Options: [accelerators] known_devices (inspector/conf/accelerators.py): a YAML or JSON
file, read and checked once at start-up; unset, the in-tree list below.
"""

import copy
import logging
from typing import Any

import yaml
from oslo_config import cfg

from inspector.errors import ConfigError
from inspector.processing.context import ProcessingContext
from inspector.processing.hooks.base import ProcessingHook

LOG = logging.getLogger(__name__)

#: The devices ironic-inspector's known_accelerators.yaml lists.
DEFAULT_KNOWN_DEVICES: dict[str, Any] = {
    "pci_devices": [
        {
            "vendor_id": "10de",
            "device_id": "1eb8",
            "type": "GPU",
            "device_info": "NVIDIA Corporation Tesla T4",
        },
        {
            "vendor_id": "10de",
            "device_id": "1df6",
            "type": "GPU",
            "device_info": "NVIDIA Corporation GV100GL",
        },
    ]
}


def read_known_devices(path: str | None) -> list[dict[str, Any]]:
    """The pci_devices list of the file (or the in-tree one); ConfigError when unusable."""
    if not path:
        return copy.deepcopy(DEFAULT_KNOWN_DEVICES["pci_devices"])
    try:
        with open(path, encoding="utf-8") as stream:
            known = yaml.safe_load(stream)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"[accelerators] known_devices: cannot read {path}: {exc}") from exc
    devices = known.get("pci_devices") if isinstance(known, dict) else None
    if not isinstance(devices, list):
        raise ConfigError(f"[accelerators] known_devices: {path} has no pci_devices list")
    for device in devices:
        if (
            not isinstance(device, dict)
            or not device.get("vendor_id")
            or not device.get("device_id")
        ):
            raise ConfigError(
                f"[accelerators] known_devices: a device of {path} lacks vendor_id or device_id"
            )
    return devices


def _key(vendor_id: Any, device_id: Any) -> tuple[str, str]:
    return str(vendor_id).lower(), str(device_id).lower()


class AccelDevicesHook(ProcessingHook):
    """properties["accelerators"]: the known accelerators among the PCI devices."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        devices = read_known_devices(conf.accelerators.known_devices)
        self.known = {_key(dev["vendor_id"], dev["device_id"]): dev for dev in devices}

    def before_update(self, context: ProcessingContext) -> None:
        devices = context.data.get("pci_devices") or []
        if not devices:
            LOG.warning("[node %s] no PCI devices: accelerators unknown", context.node.uuid)
            return
        accelerators = []
        for device in devices:
            if not isinstance(device, dict):
                continue
            known = self.known.get(_key(device.get("vendor_id"), device.get("product_id")))
            if known is not None:
                accelerators.append({**known, "pci_address": device.get("bus")})
        if accelerators:
            LOG.info("[node %s] accelerators found: %s", context.node.uuid, accelerators)
            context.changes.properties["accelerators"] = accelerators
