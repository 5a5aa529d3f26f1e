"""Forwarding: an IronicClient that hands each call to one method, `_run`, which chooses
the client that answers and what happens around the call (built on first use in
`LazyIronic`). Each method is written out: nothing is looked up by name."""

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from inspector.ironic import IronicClient
from inspector.ironic.changes import CHANGES_PAGE_SIZE
from inspector.ironic.client import DEFAULT_PAGE_SIZE
from inspector.ironic.model import IronicNode, IronicPort

T = TypeVar("T")


class Forwarding:
    """IronicClient through `_run(call)`: `call` makes the call on the client given."""

    def _run(self, call: Callable[[IronicClient], T]) -> T:
        raise NotImplementedError

    def get_node(self, ident: str) -> IronicNode:
        return self._run(lambda ironic: ironic.get_node(ident))

    def iter_nodes(
        self,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        fields: Sequence[str] | None = None,
        provision_state: str | None = None,
    ) -> Iterator[IronicNode]:
        return self._run(
            lambda ironic: ironic.iter_nodes(
                page_size=page_size, fields=fields, provision_state=provision_state
            )
        )

    def inspected_since(
        self, since: datetime | None, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> list[tuple[str, datetime]]:
        return self._run(lambda ironic: ironic.inspected_since(since, page_size=page_size))

    def get_inventory(self, node_uuid: str) -> dict[str, Any] | None:
        return self._run(lambda ironic: ironic.get_inventory(node_uuid))

    def create_node(self, *, driver: str, **fields: Any) -> IronicNode:
        return self._run(lambda ironic: ironic.create_node(driver=driver, **fields))

    def patch_node(
        self, node_uuid: str, patch: list[dict], *, reset_interfaces: bool = False
    ) -> IronicNode:
        return self._run(
            lambda ironic: ironic.patch_node(node_uuid, patch, reset_interfaces=reset_interfaces)
        )

    def add_trait(self, node_uuid: str, trait: str) -> None:
        self._run(lambda ironic: ironic.add_trait(node_uuid, trait))

    def remove_trait(self, node_uuid: str, trait: str) -> None:
        self._run(lambda ironic: ironic.remove_trait(node_uuid, trait))

    def set_boot_device(
        self, node_uuid: str, device: str = "pxe", persistent: bool = False
    ) -> None:
        self._run(lambda ironic: ironic.set_boot_device(node_uuid, device, persistent=persistent))

    def set_power_state(self, node_uuid: str, target: str) -> None:
        self._run(lambda ironic: ironic.set_power_state(node_uuid, target))

    def list_ports(self, node_uuid: str) -> list[IronicPort]:
        return self._run(lambda ironic: ironic.list_ports(node_uuid))

    def port_owner(self, address: str) -> str | None:
        return self._run(lambda ironic: ironic.port_owner(address))

    def iter_ports(
        self, *, page_size: int = DEFAULT_PAGE_SIZE, fields: Sequence[str] | None = None
    ) -> Iterator[IronicPort]:
        return self._run(lambda ironic: ironic.iter_ports(page_size=page_size, fields=fields))

    def changed_ports(
        self, since: datetime, *, page_size: int = CHANGES_PAGE_SIZE
    ) -> list[tuple[IronicPort, datetime]] | None:
        return self._run(lambda ironic: ironic.changed_ports(since, page_size=page_size))

    def last_port_change(self) -> datetime | None:
        return self._run(lambda ironic: ironic.last_port_change())

    def create_port(
        self,
        node_uuid: str,
        address: str,
        *,
        pxe_enabled: bool = True,
        extra: dict | None = None,
        local_link_connection: dict | None = None,
        physical_network: str | None = None,
    ) -> IronicPort:
        return self._run(
            lambda ironic: ironic.create_port(
                node_uuid,
                address,
                pxe_enabled=pxe_enabled,
                extra=extra,
                local_link_connection=local_link_connection,
                physical_network=physical_network,
            )
        )

    def update_port(self, port_uuid: str, patch: list[dict]) -> IronicPort:
        return self._run(lambda ironic: ironic.update_port(port_uuid, patch))

    def delete_port(self, port_uuid: str) -> None:
        self._run(lambda ironic: ironic.delete_port(port_uuid))
