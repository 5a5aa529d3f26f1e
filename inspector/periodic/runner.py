"""The periodic leader's body: one thread per task, each running its task every period
while the leadership lasts, each run recorded (fenced by the leadership term).

A task that raises is logged and runs again next period; a backend that is down
counts against its outage budget, which stops the process when spent.
"""

import logging
import threading
import time
from datetime import UTC, datetime

from inspector import redaction
from inspector.coordination.election import Fenced, Leadership
from inspector.errors import InspectorError, ServiceUnavailable
from inspector.lifecycle import Outages
from inspector.periodic.tasks import PeriodicTask
from inspector.store import Store

LOG = logging.getLogger(__name__)

#: The singleton kind (group and lease name) of the periodic tasks.
KIND = "periodic"


class Runner:
    """Callable body for `Election`: runs `tasks` while `leadership` is valid."""

    def __init__(self, store: Store, tasks: list[PeriodicTask], outages: Outages) -> None:
        self.store = store
        self.tasks = tasks
        self.outages = outages

    def __call__(self, leadership: Leadership) -> None:
        failures: list[BaseException] = []
        threads = [
            threading.Thread(
                target=self._loop,
                args=(task, leadership, failures),
                name=f"periodic-{task.name}",
                daemon=True,
            )
            for task in self.tasks
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for failure in failures:
            raise failure

    def _loop(self, task: PeriodicTask, leadership: Leadership, failures: list) -> None:
        try:
            while leadership.valid():
                try:
                    self.run_once(task, leadership)
                except ServiceUnavailable as exc:
                    LOG.warning("Periodic task %s not run: %s", task.name, exc.message)
                    if exc.service:
                        self.outages.failed(exc.service, exc.message)
                if leadership.wait(task.period):
                    return
        except Fenced as exc:
            leadership.end(exc.message)  # the sibling tasks stop too
            failures.append(exc)

    def run_once(self, task: PeriodicTask, leadership: Leadership) -> None:
        run_id = self.store.start_run(KIND, task.name, leadership.holder, leadership.term)
        if run_id is None:
            raise Fenced(f"periodic leadership term {leadership.term} was superseded")
        started = time.monotonic()
        try:
            outcome = task.run(leadership)
        except Fenced as exc:
            self._finish(run_id, leadership, f"stopped: {exc.message}")
            raise
        except ServiceUnavailable as exc:
            if exc.service:  # an outage: counted against its budget by the loop
                self._finish(run_id, leadership, f"stopped: {exc.message}")
                raise
            LOG.error("Periodic task %s failed: %s", task.name, exc.message)
            outcome = f"failed: {exc.message}"
        except InspectorError as exc:  # our own error: one line (a stack with debug on)
            LOG.error(
                "Periodic task %s failed: %s",
                task.name,
                redaction.shorten(exc.message),
                exc_info=LOG.isEnabledFor(logging.DEBUG),
            )
            outcome = f"failed: {exc.message}"
        except Exception as exc:
            LOG.exception("Periodic task %s failed", task.name)
            outcome = f"failed: {exc}"
        LOG.debug("Periodic task %s: %s (%.3f s)", task.name, outcome, time.monotonic() - started)
        self._finish(run_id, leadership, outcome)

    def _finish(self, run_id: int, leadership: Leadership, outcome: str) -> None:
        """Record the run's end: now; or, when the leadership lapsed meanwhile (its trust
        ran out: the process was frozen or cut off), the moment it did, as every action
        checks the leadership first, so none happened after it. A leadership ended first
        (the process stopping, the lease released) did not lapse: its run ends now."""
        at = None
        if leadership.lapsed():
            until = min(leadership.trusted_until(), time.time())
            at = datetime.fromtimestamp(until, UTC).replace(tzinfo=None)
            outcome += " (leadership lapsed before the end was recorded)"
        self.store.finish_run(run_id, outcome, at=at)
