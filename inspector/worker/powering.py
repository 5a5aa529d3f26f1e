"""The power actions of an introspection as Ironic sees them: asking for the power-on
(through the reboot throttle) and the final power-off, and checking what Ironic did with
them (inspector.worker.power judges), asking again for an action Ironic lost.

Runs under the node lock, for the worker's tasks; it never moves a node (the handler
does, on the outcome) and never waits for the hardware.
"""

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from oslo_config import cfg

from inspector.broker.message import Request
from inspector.errors import InspectorError, NotFound, ServiceUnavailable
from inspector.ironic import IronicClient
from inspector.machine import State
from inspector.store import NodeRecord
from inspector.worker import power
from inspector.worker.throttle import RebootThrottle

LOG = logging.getLogger(__name__)

#: The states in which a node still waits for each power action's outcome (a node that
#: left them has nothing to check: the ramdisk posted, the operator aborted...).
AWAITING = {
    power.Action.ON: frozenset({State.STARTING, State.WAITING}),
    power.Action.OFF: frozenset({State.PROCESSING, State.FINISHED}),
}


class Powering:
    """Asks Ironic for an introspection's power actions and checks their outcome."""

    def __init__(
        self,
        ironic: IronicClient,
        conf: cfg.ConfigOpts,
        *,
        throttle: RebootThrottle | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ironic = ironic
        self.conf = conf
        #: The reboot throttle; None: no throttle.
        self.throttle = throttle
        #: Wall-clock seconds, compared with a check request's enqueued_at (which any
        #: worker host may have stamped, as the queue's delays are).
        self.clock = clock

    def power_on(self, node_uuid: str, request: Request, power_state: str | None) -> None:
        """PXE boot, then the power-on (a reboot when powered), in the throttle's turn."""
        self.ironic.set_boot_device(node_uuid, "pxe", persistent=False)
        target = "rebooting" if power_state == "power on" else "power on"
        with self.throttle.turn() if self.throttle else contextlib.nullcontext():
            LOG.info(
                "[node %s req %s] %s at %.6f",
                node_uuid,
                request.request_id,
                target,
                time.time(),
            )
            self.ironic.set_power_state(node_uuid, target)

    def power_off(self, node_uuid: str, request: Request) -> Request | None:
        """The final power-off; its check. A refusal is the check's to ask again and
        then record (raised when power actions are not confirmed)."""
        check = self.first_check(request, power.Action.OFF)
        try:
            self.ironic.set_power_state(node_uuid, "power off")
        except ServiceUnavailable:
            raise
        except InspectorError as exc:
            if check is None:
                raise
            _log(
                request, logging.WARNING, "the power-off failed, to be asked again: %s", exc.message
            )
        return check

    def first_check(self, request: Request, action: power.Action) -> Request | None:
        """The first check of `action`, None when power actions are not confirmed."""
        if self.conf.ironic.power_confirm_timeout <= 0:
            return None
        return power.Check.first(request, action).request(request)

    def check(self, node: NodeRecord | None, request: Request) -> power.Outcome:
        """What Ironic did with the power action a check request is about: done, still
        pending, failed (with the node's error message), or lost and asked again (with
        the next check). A node that moved on has nothing to check."""
        check = power.Check.of(request)
        if check is None or node is None or State(node.state) not in AWAITING[check.action]:
            return power.Outcome(power.Verdict.MOVED_ON)
        if node.state == State.PROCESSING:  # its `finish` is not applied yet
            return power.Outcome(power.Verdict.PENDING)
        status = self._power_of(request)
        if status is None:
            return power.Outcome(power.Verdict.UNANSWERED)
        elapsed = self.clock() - request.enqueued_at
        timeout = self.conf.ironic.power_confirm_timeout
        outcome = power.judge(status, check.action, elapsed, timeout)
        if outcome.verdict is power.Verdict.LOST:
            outcome = self._ask_again(request, check, status.power_state, outcome.reason)
        if outcome.verdict is not power.Verdict.FAILED:
            return outcome
        if check.action is power.Action.OFF and status.provision_state == "enroll":
            return power.Outcome(power.Verdict.IGNORED, outcome.reason)
        return power.Outcome(power.Verdict.FAILED, failure(check.action, outcome.reason))

    def _power_of(self, request: Request) -> power.PowerStatus | None:
        """The node's power fields in Ironic; None when Ironic cannot say now."""
        try:
            found = self.ironic.get_node(request.node_uuid)
        except ServiceUnavailable as exc:
            _log(request, logging.WARNING, "cannot check the power now: %s", exc.message)
            return None
        except NotFound as exc:
            return power.PowerStatus(None, None, exc.message)
        return power.PowerStatus(
            found.power_state, found.target_power_state, found.last_error, found.provision_state
        )

    def _ask_again(
        self, request: Request, check: power.Check, power_state: str | None, reason: str
    ) -> power.Outcome:
        """Ask Ironic again for an action it lost, unless [ironic] power_attempts were made;
        the next check, or FAILED with Ironic's refusal."""
        attempts = self.conf.ironic.power_attempts
        if check.ask >= attempts:
            return power.Outcome(
                power.Verdict.FAILED, f"Ironic lost it {check.ask} times, the last: {reason}"
            )
        _log(
            request,
            logging.WARNING,
            "Ironic lost the power %s (%s): asking again (%d of %d)",
            check.action,
            reason,
            check.ask + 1,
            attempts,
        )
        try:
            if check.action is power.Action.ON:
                self.power_on(request.node_uuid, request, power_state)
            else:
                self.ironic.set_power_state(request.node_uuid, "power off")
        except ServiceUnavailable:
            raise
        except InspectorError as exc:
            return power.Outcome(power.Verdict.FAILED, exc.message)
        return power.Outcome(power.Verdict.LOST, reason, check.next().request(request))


def failure(action: power.Action, reason: str) -> str:
    """The node's error message for a power action that failed (the power-off's worded
    as ironic-inspector words it)."""
    if action is power.Action.OFF:
        return f"Failed to power off the node, check its power management configuration: {reason}"
    return f"Failed to power the node on to boot the ramdisk: {reason}"


def _log(request: Request, level: int, message: str, *args: Any) -> None:
    LOG.log(level, "[node %s req %s] " + message, request.node_uuid, request.request_id, *args)
