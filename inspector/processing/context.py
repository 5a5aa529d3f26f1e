"""What one processing run works on and what it wants changed in Ironic.

Hooks and rules only record changes here; the processing task applies them at the end,
as one PATCH of the node where possible, so that Ironic sees few calls.
"""

import dataclasses
from typing import Any

from oslo_config import cfg

from inspector.errors import InspectorError
from inspector.ironic import IronicNode, IronicPort


class ProcessingError(InspectorError):
    """The data cannot be processed: the node goes to error with this message."""

    http_status = 400


@dataclasses.dataclass
class PortChanges:
    add: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """New ports: {"address", "pxe_enabled", "extra", "local_link_connection",
    "physical_network"} (only address required)."""
    delete: list[str] = dataclasses.field(default_factory=list)
    """UUIDs of ports to delete."""
    patch: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    """Port UUID -> JSON patch operations."""


@dataclasses.dataclass
class NodeChanges:
    properties: dict[str, Any] = dataclasses.field(default_factory=dict)
    """node.properties[key] = value (hooks decide overwrite_existing before setting)."""
    capabilities: dict[str, str] = dataclasses.field(default_factory=dict)
    """Merged into properties.capabilities ("k1:v1,k2:v2")."""
    patch: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    """Other JSON patch operations on the node (rules' set-attribute, extend-attribute)."""
    reset_interfaces: bool = False
    """Ask Ironic to reset the node's interfaces with the PATCH (a driver change)."""
    traits_add: set[str] = dataclasses.field(default_factory=set)
    traits_remove: set[str] = dataclasses.field(default_factory=set)
    ports: PortChanges = dataclasses.field(default_factory=PortChanges)


@dataclasses.dataclass
class ProcessingContext:
    node: IronicNode
    """The node as Ironic had it when processing began."""
    ports: list[IronicPort]
    """Its ports in Ironic then."""
    data: dict[str, Any]
    """The ramdisk payload; hooks add their results to it (all_interfaces, interfaces,
    macs, local_gb, cpus, cpu_arch, memory_mb, root_disk...), as ironic-inspector did."""
    conf: cfg.ConfigOpts
    changes: NodeChanges = dataclasses.field(default_factory=NodeChanges)

    def set_property(self, name: str, value: Any) -> None:
        """Set node.properties[name], unless it is set and overwrite_existing is off."""
        current = self.node.properties.get(name)
        if current not in (None, "", 0) and not self.conf.processing.overwrite_existing:
            return
        self.changes.properties[name] = value


def capabilities_dict(text: Any) -> dict[str, str]:
    """Ironic's "k1:v1,k2:v2" capabilities string (or a dict) as a dict."""
    if isinstance(text, dict):
        return {str(k): str(v) for k, v in text.items()}
    if not text:
        return {}
    pairs = (item.split(":", 1) for item in str(text).split(",") if ":" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def capabilities_text(capabilities: dict[str, str]) -> str:
    return ",".join(f"{key}:{value}" for key, value in capabilities.items())
