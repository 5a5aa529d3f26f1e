"""Fault injection points for the crash tests; inert unless INSPECTOR_FAULTS is set.

INSPECTOR_FAULTS="pause_before_ack=continue,slow_task=inspect:2.5" pauses a worker for
good just before it would enqueue follow-ups and acknowledge a `continue` (after its
task ran), and makes the task of `inspect` take 2.5 s; `skip_tasks` runs transitions
without their Ironic and processing work (for bench/worker.py). INSPECTOR_FAULTS_MARKER names a
file the paused worker writes the request id to, so a test knows when to kill it.
`slow_periodic=timeout:60` makes each run of the periodic task `timeout` wait 60 s
before its work, as a long run would: checking its leadership, so a stop ends it.
"""

import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

from inspector.coordination.election import Leadership

LOG = logging.getLogger(__name__)


class _Periodic(Protocol):
    """A periodic task (inspector.periodic.tasks.PeriodicTask: a dataclass)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def name(self) -> str: ...
    @property
    def run(self) -> Callable[[Leadership], str]: ...


_Task = TypeVar("_Task", bound=_Periodic)


class Faults:
    def __init__(
        self,
        pause_before_ack: frozenset[str] = frozenset(),
        slow_task: Mapping[str, float] | None = None,
        marker: str | None = None,
        skip_tasks: bool = False,
        slow_periodic: Mapping[str, float] | None = None,
    ) -> None:
        self.pause_before_ack = pause_before_ack
        self.slow_task: dict[str, float] = dict(slow_task or {})
        self.marker = marker
        #: Transitions without their Ironic and processing work (bench/worker.py
        #: measures the worker's own machinery: locks, compare-and-swap, queue).
        self.skip_tasks = skip_tasks
        self.slow_periodic: dict[str, float] = dict(slow_periodic or {})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> "Faults":
        pause: set[str] = set()
        slow: dict[str, float] = {}
        slow_periodic: dict[str, float] = {}
        skip = False
        for item in filter(None, environ.get("INSPECTOR_FAULTS", "").split(",")):
            name, _, value = item.partition("=")
            if name == "pause_before_ack":
                pause.add(value)
            elif name == "skip_tasks":
                skip = True
            elif name in ("slow_task", "slow_periodic"):
                what, _, seconds = value.partition(":")
                (slow if name == "slow_task" else slow_periodic)[what] = float(seconds)
            else:
                raise ValueError(f"unknown fault {name!r} in INSPECTOR_FAULTS")
        if pause or slow or slow_periodic or skip:
            LOG.warning("Fault injection enabled: %s", environ["INSPECTOR_FAULTS"])
        marker = environ.get("INSPECTOR_FAULTS_MARKER")
        return cls(frozenset(pause), slow, marker, skip, slow_periodic)

    def before_ack(self, event: str, request_id: str) -> None:
        if event not in self.pause_before_ack:
            return
        LOG.warning("Fault: pausing for good before acknowledging %s %s", event, request_id)
        if self.marker:
            with open(self.marker, "a") as marker:
                marker.write(request_id + "\n")
        threading.Event().wait()

    def task_delay(self, event: str) -> None:
        seconds = self.slow_task.get(event)
        if seconds:
            # Deliberately not the shutdown flag: a running task finishes on SIGTERM.
            threading.Event().wait(seconds)

    def periodic(self, tasks: list[_Task]) -> list[_Task]:
        """The periodic tasks (inspector.periodic.tasks.PeriodicTask), those named in
        slow_periodic waiting that long before each run's work (or until the leadership
        ends, when the run stops: Fenced)."""
        return [
            dataclasses.replace(task, run=_slowed(task.run, self.slow_periodic[task.name]))
            if task.name in self.slow_periodic
            else task
            for task in tasks
        ]


def _slowed(run: Callable[[Leadership], str], seconds: float) -> Callable[[Leadership], str]:
    def slowed(leadership: Leadership) -> str:
        leadership.wait(seconds)
        leadership.check()
        return run(leadership)

    return slowed


NO_FAULTS = Faults()
