"""The work bound to each transition, and the follow-up events it produces.

A task runs under the node lock after the state change is committed, so it must be
idempotent for reentrant events: a redelivered request runs it again.
"""

import logging
from typing import Any

from inspector.broker.message import Request
from inspector.errors import InspectorError
from inspector.ironic import bmc_addresses
from inspector.machine import Event, State, Transition
from inspector.processing import lookup
from inspector.store import NodeRecord, Store

LOG = logging.getLogger(__name__)

#: Events a worker enqueues once the task of a transition into these states ran.
FOLLOW_UPS: dict[State, tuple[Event, ...]] = {
    State.STARTING: (Event.WAIT,),
    State.PROCESSING: (Event.FINISH,),
    State.REAPPLYING: (Event.FINISH,),
    State.ENROLLING: (Event.CONTINUE,),
}


class ProcessingError(InspectorError):
    """The ramdisk data cannot be processed: the node goes to error with this message."""


#: The error message of an `error` event whose request carries none.
DEFAULT_ERROR = "Introspection failed"


class Tasks:
    """Runs the task of a transition: the Ironic work of starting an introspection, and
    the processing of ramdisk data. Tests subclass it to record or fail."""

    def __init__(self, store: Store | None = None, ironic: Any = None, conf: Any = None) -> None:
        self.store = store
        self.ironic = ironic
        self.conf = conf

    def has_work(self, target: State) -> bool:
        """Whether entering target runs a task or enqueues a follow-up."""
        return target in FOLLOW_UPS

    def run(self, node: NodeRecord, request: Request, transition: Transition) -> list[Event]:
        """Do the transition's work; return the follow-up events to enqueue."""
        handler = {
            State.STARTING: self.start,
            State.PROCESSING: self.process,
            State.REAPPLYING: self.process,
        }.get(transition.target)
        if handler is not None:
            handler(node, request)
        return list(FOLLOW_UPS.get(transition.target, ()))

    def start(self, node: NodeRecord, request: Request) -> None:
        """Record how the ramdisk will find the node (its ports' MACs, its BMC addresses),
        then, when boot is managed, set PXE boot and power it on. Idempotent."""
        if self.ironic is None or self.store is None:
            return
        ironic_node = self.ironic.get_node(node.uuid)
        macs = [port.address for port in self.ironic.list_ports(node.uuid)]
        bmcs = bmc_addresses(ironic_node.driver_info)
        self.store.set_attributes(node.uuid, {lookup.MAC: macs, lookup.BMC: bmcs})
        LOG.info(
            "[node %s req %s] lookup by MACs %s, BMC %s",
            node.uuid,
            request.request_id,
            ", ".join(macs) or "-",
            ", ".join(bmcs) or "-",
        )
        if not node.manage_boot:
            return
        self.ironic.set_boot_device(node.uuid, "pxe", persistent=False)
        target = "rebooting" if ironic_node.power_state == "power on" else "power on"
        self.ironic.set_power_state(node.uuid, target)

    def process(self, node: NodeRecord, request: Request) -> None:
        """Process the stored ramdisk data: store the result when [processing] store_data
        says so, and power the node off when boot is managed and power_off is set."""
        if self.store is None:
            return
        data = self.store.get_data(node.uuid, processed=False)
        if data is None:
            raise ProcessingError(f"no ramdisk data stored for node {node.uuid}")
        if self.conf is not None and self.conf.processing.store_data == "database":
            self.store.store_data(node.uuid, data, processed=True)
        if self.ironic is not None and node.manage_boot and self._power_off():
            self.ironic.set_power_state(node.uuid, "power off")

    def _power_off(self) -> bool:
        return self.conf is None or self.conf.processing.power_off

    def error_reason(self, request: Request) -> str:
        """The message an `error` request puts on the node."""
        return DEFAULT_ERROR
