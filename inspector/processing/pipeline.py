"""One processing run: the raw data's types and [limits] checked, hooks, then
introspection rules, then the changes sent to Ironic in as few calls as possible (one
PATCH of the node; port and trait calls only when needed, at most [limits] max_new_ports
new ports). Returns the processed data; stores nothing itself."""

import copy
import logging
from typing import Any

from oslo_config import cfg

from inspector.ironic import IronicClient, IronicNode, IronicPort
from inspector.processing import drift, payload
from inspector.processing import hooks as hook_plugins
from inspector.processing import rules as rule_engine
from inspector.processing.context import (
    NodeChanges,
    ProcessingContext,
    ProcessingError,
    capabilities_dict,
    capabilities_text,
)

LOG = logging.getLogger(__name__)

#: The processed data's key of the hardware drift since the previous introspection.
DRIFT = drift.KEY


def node_patch(node: IronicNode, changes: NodeChanges) -> list[dict[str, Any]]:
    """The JSON patch for the node: properties, merged capabilities, then the rest."""
    patch = [
        {"op": "add", "path": f"/properties/{name}", "value": value}
        for name, value in changes.properties.items()
    ]
    if changes.capabilities:
        merged = capabilities_dict(node.properties.get("capabilities"))
        merged.update(changes.capabilities)
        # set-capability without a value removes the capability (ironic-inspector's).
        merged = {key: value for key, value in merged.items() if value is not None}
        patch.append(
            {"op": "add", "path": "/properties/capabilities", "value": capabilities_text(merged)}
        )
    return patch + list(changes.patch)


def apply(ironic: IronicClient, node: IronicNode, changes: NodeChanges) -> int:
    """Send the changes to Ironic; the number of calls it took."""
    calls = 0
    patch = node_patch(node, changes)
    if patch:
        ironic.patch_node(node.uuid, patch, reset_interfaces=changes.reset_interfaces)
        calls += 1
    for port in changes.ports.add:
        fields = {k: v for k, v in port.items() if k not in ("address", "pxe_enabled")}
        ironic.create_port(
            node.uuid, port["address"], pxe_enabled=port.get("pxe_enabled", True), **fields
        )
        calls += 1
    for port_uuid, port_patch in changes.ports.patch.items():
        if port_patch:
            ironic.update_port(port_uuid, port_patch)
            calls += 1
    for port_uuid in changes.ports.delete:
        ironic.delete_port(port_uuid)
        calls += 1
    for trait in sorted(changes.traits_add):
        ironic.add_trait(node.uuid, trait)
        calls += 1
    for trait in sorted(changes.traits_remove - changes.traits_add):
        ironic.remove_trait(node.uuid, trait)
        calls += 1
    return calls


def check_new_ports(conf: cfg.ConfigOpts, changes: NodeChanges) -> None:
    """ProcessingError, before anything is sent to Ironic, when the run would create more
    ports than [limits] max_new_ports: a partial set of ports would be arbitrary."""
    count, limit = len(changes.ports.add), conf.limits.max_new_ports
    if count > limit:
        raise ProcessingError(
            f"Processing would create {count} Ironic ports (the interfaces [processing] "
            f"add_ports = {conf.processing.add_ports} selects), more than [limits] "
            f"max_new_ports = {limit}: nothing was changed in Ironic"
        )


def process(
    conf: cfg.ConfigOpts,
    ironic: IronicClient,
    node_uuid: str,
    raw: dict[str, Any],
    rules: list[dict],
    *,
    hooks: list[hook_plugins.ProcessingHook] | None = None,
    known: tuple[IronicNode, list[IronicPort]] | None = None,
    base: tuple[int, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run the whole processing of `raw` for the node; raises ProcessingError (or an
    Ironic error) when it cannot be done. Returns the processed data.

    `known`: the node and its ports as already read (at the introspection's start);
    without it both are read from Ironic. `base`: the id and data of the node's previous
    finished introspection, what the `drift` key compares with (none: no drift)."""
    payload.check(raw, conf)  # stored before the API checked it, or a reapply's body
    node, ports = known or (ironic.get_node(node_uuid), ironic.list_ports(node_uuid))
    context = ProcessingContext(
        node=node,
        ports=ports,
        data=copy.deepcopy(raw),
        conf=conf,
    )
    context.data.pop("logs", None)
    # Before hooks and rules, so that both can act on it.
    base_id, base_data = base or (None, None)
    context.data[DRIFT] = drift.document(base_id, base_data, raw)
    hook_plugins.run(hooks if hooks is not None else hook_plugins.load(conf), context)
    applicable = [rule for rule in rules if rule_engine.applies(rule, node)]
    matched = rule_engine.evaluate(applicable, context)
    check_new_ports(conf, context.changes)
    calls = apply(ironic, node, context.changes)
    LOG.info(
        "[node %s] processed: %d rules matched, %d Ironic update calls",
        node_uuid,
        len(matched),
        calls,
    )
    return context.data
