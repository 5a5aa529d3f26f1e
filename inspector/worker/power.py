"""Confirming a power action Ironic accepted: the check requests and the verdict on what
Ironic says of the node. Pure: no I/O, no waiting (inspector.worker.tasks asks Ironic and
asks again, inspector.worker.handler settles the check and moves the node).

Ironic answers a power request with 202 once its conductor set `target_power_state`; the
action then runs in the background. A conductor that dies meanwhile clears the target on
its restart, with the last_error "Pending power operation was aborted due to conductor
restart" (or "... take over" when another conductor adopts the node): nothing happens
unless the action is asked again. A check is a request on the work queue (not a
state machine event: it moves no node while the action is pending), redelivered with the
worker's back-off until Ironic says the action is done, lost or failed, so no worker
thread waits for the hardware.
"""

import dataclasses
import enum

from inspector.broker.message import Request

#: The event name of a check request (not a state machine event, like a removal).
CHECK = "check-power"
#: What Ironic writes into last_error when it drops a pending power action: on the
#: conductor's restart, or on another conductor's take-over of the node.
ABORTED = "Pending power operation was aborted"


class Action(enum.StrEnum):
    """What was asked of Ironic: the power-on (or reboot) that boots the ramdisk, or the
    final power-off after processing."""

    ON = "on"
    OFF = "off"

    @property
    def wanted(self) -> str:
        """The power_state Ironic reports once the action is done."""
        return "power on" if self is Action.ON else "power off"


class Verdict(enum.StrEnum):
    CONFIRMED = "confirmed"  # Ironic reached the power state asked for
    PENDING = "pending"  # Ironic is still at it: check later
    #: Ironic cannot be asked now: check later, the bound counted again from then (the
    #: time Ironic is away is not the node's failure, and a restarted Ironic may show
    #: the target it is about to clear for a moment after its API answers).
    UNANSWERED = "unanswered"
    LOST = "lost"  # Ironic dropped it without an error of its own: ask again
    FAILED = "failed"  # Ironic refused or failed it, or never finished: give up
    MOVED_ON = "moved on"  # the node no longer waits for it (the ramdisk posted, ...)
    #: A final power-off Ironic failed on a node it has in `enroll` (discovered, maybe
    #: without power credentials yet): not recorded, as ironic-inspector does.
    IGNORED = "failed, ignored in enroll"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a check found; `reason` is Ironic's (or ours) for LOST and FAILED."""

    verdict: Verdict
    reason: str = ""
    #: The next check to enqueue (after asking again).
    next_check: Request | None = None


@dataclasses.dataclass(frozen=True)
class Check:
    """A check request as its id spells it: `<base>.power-<action>.<ask>`, `base` the
    id of the request whose task asked first, `ask` counting the requests to Ironic (1:
    the first). The id is stable across the check's redeliveries and unique per ask."""

    action: Action
    ask: int
    base: str

    @classmethod
    def first(cls, parent: Request, action: Action) -> "Check":
        """The check of the first ask, by the task of `parent`."""
        return cls(action, 1, parent.request_id[:40])

    def next(self) -> "Check":
        """The check of the following ask."""
        return dataclasses.replace(self, ask=self.ask + 1)

    def request(self, parent: Request) -> Request:
        """This check as a request, made by `parent` (the task's request, or a check)."""
        return parent.follow_up(CHECK, request_id=f"{self.base}.power-{self.action}.{self.ask}")

    @classmethod
    def of(cls, request: Request) -> "Check | None":
        """The check a request carries; None when its id is not a check's (then it is
        consumed: nothing to confirm)."""
        base, _, rest = request.request_id.rpartition(".power-")
        action, _, ask = rest.partition(".")
        if not base or action not in {a.value for a in Action} or not ask.isdigit():
            return None
        return cls(Action(action), int(ask), base)


@dataclasses.dataclass(frozen=True)
class PowerStatus:
    """The node's power fields as Ironic reports them."""

    power_state: str | None
    target_power_state: str | None
    last_error: str | None
    provision_state: str | None = None


def judge(status: PowerStatus, action: Action, elapsed: float, timeout: float) -> Outcome:
    """The verdict on `action`, asked `elapsed` seconds ago, from Ironic's `status`."""
    if status.target_power_state:
        if elapsed < timeout:
            return Outcome(Verdict.PENDING)
        return Outcome(
            Verdict.FAILED,
            f"Ironic did not finish the power {action} within {timeout:g} s "
            f"(power state {status.power_state}, target {status.target_power_state})",
        )
    if status.last_error:
        if ABORTED in status.last_error:
            return Outcome(Verdict.LOST, status.last_error)
        return Outcome(Verdict.FAILED, status.last_error)
    if status.power_state == action.wanted:
        return Outcome(Verdict.CONFIRMED)
    return Outcome(
        Verdict.LOST,
        f"Ironic's power state is {status.power_state}, with no action pending and no error",
    )
