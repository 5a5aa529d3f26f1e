"""The work of each transition: what the `task` column of inspector.machine's table names.

A task runs under the node lock after the state change is committed, so it must be
idempotent for reentrant events: a redelivered request runs it again.
"""

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from oslo_config import cfg

from inspector.broker.channels import Announcer
from inspector.broker.message import Request
from inspector.errors import Conflict
from inspector.ironic import IronicClient, IronicNode, IronicPort, bmc_addresses
from inspector.machine import Task, Transition
from inspector.processing import hooks as hook_plugins
from inspector.processing import lookup, pipeline
from inspector.processing.context import ProcessingError
from inspector.store import NodeRecord, WorkerStore
from inspector.store.snapshots import SnapshotRecord
from inspector.worker import power
from inspector.worker.metrics import NoMetrics, Recorder
from inspector.worker.powering import Powering
from inspector.worker.throttle import RebootThrottle

LOG = logging.getLogger(__name__)


def _no_dns(*_args: object, **_kwargs: object) -> list[Any]:
    """A resolver that resolves nothing (see Tasks._refuse_known_bmc)."""
    return []


def _node_of(record: SnapshotRecord | None) -> IronicNode | None:
    """The snapshot's node; None without one, or when another release wrote it."""
    if record is None:
        return None
    try:
        return IronicNode(**record.node)
    except TypeError:
        return None


#: The error message of an `error` event whose request carries none.
DEFAULT_ERROR = "Introspection failed"


class Runner(Protocol):
    """What the worker's step asks of the tasks (Tasks, or NoTasks)."""

    def has_work(self, transition: Transition) -> bool: ...
    def run(self, node: NodeRecord, request: Request, transition: Transition) -> Request | None: ...
    def check_power(self, node: NodeRecord | None, request: Request) -> power.Outcome: ...
    def error_reason(self, request: Request) -> str: ...


class NoTasks:
    """The table's transitions without their work: a worker whose tasks are skipped (the
    engine benchmark, inspector.worker.faults) still follows every transition."""

    def has_work(self, transition: Transition) -> bool:
        return transition.task is not None and not transition.task.is_quick

    def run(self, node: NodeRecord, request: Request, transition: Transition) -> None:
        pass

    def check_power(self, node: NodeRecord | None, request: Request) -> power.Outcome:
        return power.Outcome(power.Verdict.CONFIRMED)

    def error_reason(self, request: Request) -> str:
        return DEFAULT_ERROR


class Tasks:
    """Runs the task the table names for a transition: the Ironic work of starting an
    introspection, the processing of ramdisk data, discovery's enrolment, and the
    announcement of an end to the PXE firewalls. Tests subclass it to record or fail."""

    def __init__(
        self,
        store: WorkerStore,
        ironic: IronicClient,
        conf: cfg.ConfigOpts,
        *,
        throttle: RebootThrottle | None = None,
        announcer: Announcer | None = None,
        clock: Callable[[], float] = time.time,
        metrics: Recorder | None = None,
    ) -> None:
        self.store = store
        self.ironic = ironic
        self.conf = conf
        #: The power actions, and their checks.
        self.power = Powering(ironic, conf, throttle=throttle, clock=clock)
        #: Tells the PXE firewalls when an introspection starts and ends; None: they
        #: learn it by polling the store only.
        self.announcer = announcer
        # Loaded once: an unknown hook name stops start-up, not every introspection.
        self.hooks = hook_plugins.load(conf)
        #: Counts the drifts found (inspector.worker.metrics).
        self.metrics = metrics or NoMetrics()

    @property
    def keeps_history(self) -> bool:
        """Whether ended introspections are kept with their data: only when stored."""
        return self.conf.processing.store_data == "database"

    def has_work(self, transition: Transition) -> bool:
        """Whether the transition's task does anything here: an end's announcement only
        with an announcer."""
        if transition.task is Task.END:
            return self.announcer is not None or self.keeps_history
        return transition.task is not None

    def run(self, node: NodeRecord, request: Request, transition: Transition) -> Request | None:
        """Do the transition's task (the table's `task` column); the check of the power
        action it asked Ironic for (inspector.worker.power), for the handler to enqueue."""
        if transition.task is Task.START:
            return self.start(node, request)
        if transition.task is Task.PROCESS:
            return self.process(node, request)
        if transition.task is Task.REAPPLY:
            self.reapply(node, request)
        elif transition.task is Task.ENROLL:
            self.enroll(node, request)
        elif transition.task is Task.END:
            self.end(node)
        return None

    def end(self, node: NodeRecord) -> None:
        """Keep the ended introspection in the node's history (an upsert: idempotent),
        then tell the PXE firewalls (with an announcer)."""
        if self.keeps_history:
            self.store.keep_introspection(node)
        if self.announcer is not None:
            self.announcer.introspection_ended(node.uuid)

    def start(self, node: NodeRecord, request: Request) -> Request | None:
        """Record how the ramdisk will find the node (its ports' MACs, its BMC addresses),
        then, when boot is managed, set PXE boot and power it on; the check of the
        power-on. Idempotent."""
        # The node as the API read it to accept this start, else as Ironic has it now.
        record = self._fresh_snapshot(node)
        ironic_node = _node_of(record) or self.ironic.get_node(node.uuid)
        ports = self.ironic.list_ports(node.uuid)
        macs = [port.address for port in ports]
        bmcs = bmc_addresses(ironic_node.driver_info)
        self.store.set_attributes(node.uuid, {lookup.MAC: macs, lookup.BMC: bmcs})
        # What processing starts from, so that it need not read Ironic again.
        self.store.save_snapshot(
            node.uuid, dataclasses.asdict(ironic_node), [dataclasses.asdict(p) for p in ports]
        )
        if self.announcer is not None:
            # Before the power-on: the leader whitelists the MACs in milliseconds.
            self.announcer.introspection_started(node.uuid, macs)
        LOG.info(
            "[node %s req %s] lookup by MACs %s, BMC %s",
            node.uuid,
            request.request_id,
            ", ".join(macs) or "-",
            ", ".join(bmcs) or "-",
        )
        if not node.manage_boot:
            return None
        self.power.power_on(node.uuid, request, ironic_node.power_state)
        return self.power.first_check(request, power.Action.ON)

    def reapply(self, node: NodeRecord, request: Request) -> None:
        """Hooks and rules again on the stored data; power is left alone."""
        self.process(node, request, power_off=False)

    def process(
        self, node: NodeRecord, request: Request, *, power_off: bool = True
    ) -> Request | None:
        """Process the stored ramdisk data (hooks, rules, one update of Ironic), store
        the result when [processing] store_data says so, and power the node off when
        boot is managed and [processing] power_off is set; the check of the power-off."""
        raw = self.store.get_data(node.uuid, processed=False)
        if raw is None:
            raise ProcessingError(f"no ramdisk data stored for node {node.uuid}")
        # A reapply reads Ironic afresh; an introspection goes on from its start.
        known = self._snapshot(node) if power_off else None
        processed = pipeline.process(
            self.conf,
            self.ironic,
            node.uuid,
            raw,
            self.store.all_rules(),
            hooks=self.hooks,
            known=known,
            base=self._drift_base(node),
        )
        if self.keeps_history:
            self.store.store_data(node.uuid, processed, processed=True)
        found = processed[pipeline.DRIFT]
        if power_off and found["changes"]:  # a reapply tells nothing new
            self.store.notify_drift(node.uuid, node.started_at, found)
            self.metrics.drift_found(found["summary"])
        if not (power_off and node.manage_boot and self.conf.processing.power_off):
            return None
        return self.power.power_off(node.uuid, request)

    def _drift_base(self, node: NodeRecord) -> tuple[int, dict] | None:
        """The id and raw data of the node's finished introspection before this one."""
        if not self.keeps_history or node.started_at is None:
            return None
        for entry in self.store.finished_introspections(node.uuid, before=node.started_at):
            found = self.store.history_data(node.uuid, entry.id)
            if found is not None and found[1]["raw"] is not None:
                return entry.id, found[1]["raw"]
        return None

    def _snapshot(self, node: NodeRecord) -> tuple[IronicNode, list[IronicPort]] | None:
        """Ironic's node and ports as this introspection's start read them; None when
        there is no such snapshot (discovery, an older worker, one from an earlier
        introspection), and processing then reads Ironic."""
        record = self._fresh_snapshot(node)
        ironic_node = _node_of(record)
        if record is None or ironic_node is None or record.ports is None:
            return None
        try:
            return ironic_node, [IronicPort(**port) for port in record.ports]
        except TypeError:  # written by a release whose models had other fields
            return None

    def _fresh_snapshot(self, node: NodeRecord) -> SnapshotRecord | None:
        """The node's snapshot when taken for this introspection (not before its start)."""
        if node.started_at is None:
            return None
        record = self.store.snapshot(node.uuid)
        return record if record is not None and record.taken_at >= node.started_at else None

    def enroll(self, node: NodeRecord, request: Request) -> None:
        """Discovery: create the node in Ironic (with the UUID the API gave the ramdisk)
        and record how to find it. Idempotent: a node already created is reused."""
        raw = self.store.get_data(node.uuid, processed=False) or {}
        wanted = lookup.attributes(raw)
        fields: dict[str, Any] = dict(self.conf.discovery.enroll_node_fields)
        driver_info = dict(fields.pop("driver_info", None) or {})
        for mac in wanted[lookup.MAC]:
            owner = self.ironic.port_owner(mac)
            if owner is not None and owner != node.uuid:
                raise ProcessingError(
                    f"Not enrolling: MAC {mac} already belongs to Ironic node {owner}"
                )
        if wanted[lookup.BMC]:
            self._refuse_known_bmc(node.uuid, wanted[lookup.BMC])
            driver_info.setdefault("ipmi_address", wanted[lookup.BMC][0])
        try:
            self.ironic.create_node(
                driver=self.conf.discovery.enroll_node_driver,
                uuid=node.uuid,
                driver_info=driver_info,
                **fields,
            )
        except Conflict:
            self.ironic.get_node(node.uuid)  # created by an earlier attempt of this task
        self.store.set_attributes(node.uuid, wanted)
        LOG.info("[node %s req %s] enrolled in Ironic", node.uuid, request.request_id)

    def _refuse_known_bmc(self, node_uuid: str, bmcs: list[str]) -> None:
        """Discovery must not enrol a second node for a BMC Ironic already has (as
        ironic-inspector's enroll hook refused). Literal addresses only: resolving the
        host names of every node's driver_info would make discovery hang on DNS."""
        wanted = set(bmcs)
        for known in self.ironic.iter_nodes(fields=["driver_info"]):
            if known.uuid == node_uuid:
                continue
            shared = wanted & set(bmc_addresses(known.driver_info or {}, resolve=_no_dns))
            if shared:
                raise ProcessingError(
                    f"Not enrolling: BMC address {', '.join(sorted(shared))} already "
                    f"belongs to Ironic node {known.uuid}"
                )

    def check_power(self, node: NodeRecord | None, request: Request) -> power.Outcome:
        """What Ironic did with the power action a check request is about (Powering.check)."""
        return self.power.check(node, request)

    def error_reason(self, request: Request) -> str:
        """The message an `error` request puts on the node."""
        return DEFAULT_ERROR
