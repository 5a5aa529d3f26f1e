"""The Ironic client: what we read from and change in Ironic, over its REST API.

Owns the connection to Ironic, its retry policy and the mapping of its failures to our
errors; no keystoneauth or transport exception leaves this package. It decides nothing
about inspection itself. `IronicClient` is what the rest of the service may call:
`Ironic`, the `LazyIronic` a process holds and the tests' fake all implement it.
"""

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, Protocol

from inspector.ironic.bmc import bmc_addresses
from inspector.ironic.client import Ironic
from inspector.ironic.connection import API_VERSION, connect
from inspector.ironic.model import IronicNode, IronicPort


class IronicClient(Protocol):
    """Ironic as the service uses it (see `Ironic` for what each call does)."""

    def get_node(self, ident: str) -> IronicNode: ...
    def iter_nodes(
        self,
        *,
        page_size: int = ...,
        fields: Sequence[str] | None = None,
        provision_state: str | None = None,
    ) -> Iterator[IronicNode]: ...
    def inspected_since(
        self, since: datetime | None, *, page_size: int = ...
    ) -> list[tuple[str, datetime]]: ...
    def get_inventory(self, node_uuid: str) -> dict[str, Any] | None: ...
    def create_node(self, *, driver: str, **fields: Any) -> IronicNode: ...
    def patch_node(
        self, node_uuid: str, patch: list[dict], *, reset_interfaces: bool = False
    ) -> IronicNode: ...
    def add_trait(self, node_uuid: str, trait: str) -> None: ...
    def remove_trait(self, node_uuid: str, trait: str) -> None: ...
    def set_boot_device(
        self, node_uuid: str, device: str = "pxe", persistent: bool = False
    ) -> None: ...
    def set_power_state(self, node_uuid: str, target: str) -> None: ...
    def list_ports(self, node_uuid: str) -> list[IronicPort]: ...
    def port_owner(self, address: str) -> str | None: ...
    def iter_ports(
        self, *, page_size: int = ..., fields: Sequence[str] | None = None
    ) -> Iterator[IronicPort]: ...
    def changed_ports(
        self, since: datetime, *, page_size: int = ...
    ) -> list[tuple[IronicPort, datetime]] | None: ...
    def last_port_change(self) -> datetime | None: ...
    def create_port(
        self,
        node_uuid: str,
        address: str,
        *,
        pxe_enabled: bool = True,
        extra: dict | None = None,
        local_link_connection: dict | None = None,
        physical_network: str | None = None,
    ) -> IronicPort: ...
    def update_port(self, port_uuid: str, patch: list[dict]) -> IronicPort: ...
    def delete_port(self, port_uuid: str) -> None: ...


__all__ = [
    "API_VERSION",
    "Ironic",
    "IronicClient",
    "IronicNode",
    "IronicPort",
    "bmc_addresses",
    "connect",
]
