"""The node's ports as hooks see them during one run: Ironic's ports not being deleted,
the ports being added, and port patches recorded without duplicate paths.

Never calls Ironic: the processing task applies context.changes.ports at the end.
"""

from typing import Any

from inspector.ironic import IronicPort
from inspector.processing.context import ProcessingContext


def existing(context: ProcessingContext) -> dict[str, IronicPort]:
    """MAC (lowercase) -> Ironic port, without the ports this run deletes."""
    deleted = set(context.changes.ports.delete)
    return {p.address.lower(): p for p in context.ports if p.uuid not in deleted}


def added(context: ProcessingContext) -> dict[str, dict[str, Any]]:
    """MAC (lowercase) -> the new port's fields; changing the dict changes the new port."""
    return {port["address"].lower(): port for port in context.changes.ports.add}


def record_patch(context: ProcessingContext, port_uuid: str, operation: dict[str, Any]) -> None:
    """Add a JSON patch operation for the port, replacing an earlier one on the same path."""
    operations = context.changes.ports.patch.setdefault(port_uuid, [])
    operations[:] = [op for op in operations if op.get("path") != operation["path"]]
    operations.append(operation)
