"""What we keep of Ironic's nodes and ports: frozen values built from Ironic's JSON names.

Must not talk to Ironic: the client builds these from what it received.
"""

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


@dataclasses.dataclass(frozen=True)
class IronicNode:
    uuid: str
    name: str | None
    #: None only when a listing asked for a subset of fields that left it out.
    provision_state: str
    power_state: str | None
    driver: str
    driver_info: dict
    properties: dict
    extra: dict
    maintenance: bool
    inspect_interface: str | None
    #: The power state a power action under way is to reach; None when none is.
    target_power_state: str | None = None
    #: Ironic's message about the node's last failed action (power, provisioning).
    last_error: str | None = None
    #: When the provision state last changed, as Ironic writes it (ISO 8601).
    provision_updated_at: str | None = None

    @classmethod
    def from_ironic(cls, data: Mapping[str, Any]) -> "IronicNode":
        """From a node as Ironic's API names its fields (absent fields get empty values)."""
        return cls(
            uuid=data["uuid"],
            name=data.get("name"),
            # Ironic sends both for every node (its API's required fields).
            provision_state=data.get("provision_state"),  # type: ignore[arg-type]
            power_state=data.get("power_state"),
            driver=data.get("driver"),  # type: ignore[arg-type]
            driver_info=dict(data.get("driver_info") or {}),
            properties=dict(data.get("properties") or {}),
            extra=dict(data.get("extra") or {}),
            maintenance=bool(data.get("maintenance")),
            inspect_interface=data.get("inspect_interface"),
            target_power_state=data.get("target_power_state"),
            last_error=data.get("last_error"),
            provision_updated_at=data.get("provision_updated_at"),
        )


@dataclasses.dataclass(frozen=True)
class IronicPort:
    uuid: str
    node_uuid: str
    address: str
    pxe_enabled: bool
    extra: dict
    local_link_connection: dict
    physical_network: str | None

    @classmethod
    def from_ironic(cls, data: Mapping[str, Any]) -> "IronicPort":
        """From a port as Ironic's API names its fields."""
        pxe_enabled = data.get("pxe_enabled")
        return cls(
            uuid=data["uuid"],
            node_uuid=data["node_uuid"],
            address=data["address"],
            # Ironic's default for a port created without the flag.
            pxe_enabled=True if pxe_enabled is None else bool(pxe_enabled),
            extra=dict(data.get("extra") or {}),
            local_link_connection=dict(data.get("local_link_connection") or {}),
            physical_network=data.get("physical_network"),
        )


def timestamp(value: Any) -> datetime | None:
    """An Ironic timestamp (ISO 8601, with or without a zone) as naive UTC; None for none
    or for what is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)
