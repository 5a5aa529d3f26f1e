"""Leader election of one singleton kind: the group (party), the leader lease, the
reset flag, and the fencing that stops a deposed leader before a new one acts.

Every process runs one `Election` per singleton kind. It joins the group
`inspector-<kind>`, watches it, and tries to take the lease `inspector-leader-<kind>`.
The winner claims a new term (a fencing token, recorded by `claim`) and runs the
singleton's body in its own thread with a `Leadership`. When the lease cannot be
renewed, the leader finds itself dropped from the group (frozen, cut off), or the
process stops, the leadership is reset: its reset flag is set, the body is joined, and
only then is the lease released. Another member leaving changes nothing: the lease, not
the membership, says who leads, so a follower's exit never interrupts the singleton
(the PXE firewall stays open through it).

A leader frozen (SIGSTOP) or cut off past its lease acts no more: `Leadership.valid()`
turns false once the lease may have expired by the local monotonic clock, and the
term can be checked against the store before each recorded action.
"""

import logging
import math
import threading
import time
from collections.abc import Callable

from inspector.coordination.base import Coordinator, Lease
from inspector.errors import InspectorError, ServiceUnavailable
from inspector.lifecycle import Lifecycle, Outages

LOG = logging.getLogger(__name__)

#: Part of the lease a leader trusts: it stops acting this much before the DLM could
#: hand the lease to someone else (clock drift, scheduling, the renew round trip).
SAFETY = 0.8
#: Seconds a reset waits for the singleton's body to return before releasing the lease.
JOIN_TIMEOUT = 30.0


class Fenced(InspectorError):
    """This process is no longer (or may no longer be) the leader: stop acting."""

    http_status = 409


class Reset(threading.Event):
    """A leadership's reset flag; it remembers when it was first set (monotonic time)."""

    def __init__(self) -> None:
        super().__init__()
        self.at = math.inf
        self._first = threading.Lock()

    def set(self) -> None:
        with self._first:
            self.at = min(self.at, time.monotonic())
        super().set()


class Leadership:
    """One term of leadership, as the singleton's body sees it."""

    def __init__(
        self, kind: str, holder: str, term: int, lease_seconds: float, acquired_at: float
    ) -> None:
        self.kind = kind
        self.holder = holder
        self.term = term
        self.reset = Reset()
        #: Why the leadership was ended (`end`): the process stopping, the lease lost...
        self.why = ""
        self._trust = lease_seconds * SAFETY
        self._deadline = acquired_at + self._trust

    def renewed(self, at: float) -> None:
        """The lease was renewed by a call that started at monotonic time `at`."""
        self._deadline = at + self._trust

    def end(self, why: str) -> None:
        """End this leadership (set its reset flag), saying why."""
        self.why = self.why or why
        self.reset.set()

    def valid(self) -> bool:
        return not self.reset.is_set() and time.monotonic() < self._deadline

    def lapsed(self) -> bool:
        """Whether its trust ran out (the lease may have expired: the process was frozen
        or cut off) before it was reset. One reset first (the process stopping, the lease
        released or found lost in time) did not lapse, whatever the time now; one on a
        lease that never expires (the in-process DLM's) never does."""
        return min(time.monotonic(), self.reset.at) >= self._deadline

    def trusted_until(self) -> float:
        """Wall-clock time (epoch) after which this leadership may no longer act:
        math.inf on a lease that never expires."""
        return time.time() - (time.monotonic() - self._deadline)

    def check(self) -> None:
        """Raise Fenced unless this leadership may still act."""
        if not self.valid():
            why = f": {self.why}" if self.why else ""
            raise Fenced(f"no longer the {self.kind} leader (term {self.term}){why}")

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` on the reset flag; True when the leadership is over."""
        self.reset.wait(seconds)
        return not self.valid()


Body = Callable[[Leadership], None]


class Election:
    """One process's part in the election of one singleton kind."""

    def __init__(
        self,
        coordinator: Coordinator,
        kind: str,
        body: Body,
        lifecycle: Lifecycle,
        outages: Outages,
        *,
        interval: float = 0.5,
        claim: Callable[[str, str], int] | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.kind = kind
        self.body = body
        self.lifecycle = lifecycle
        self.outages = outages
        self.interval = interval
        self.group = f"inspector-{kind}"
        self._claim = claim
        self._lease: Lease | None = None
        self._leadership: Leadership | None = None
        self._body_thread: threading.Thread | None = None
        self._thread: threading.Thread | None = None
        self._joined = False
        self._seen: frozenset[str] = frozenset()
        self._terms = 0
        # The group is looked at every third of the lease (1 s by default), not at every
        # look: listing it is the DLM's costliest call (0.5 ms of CPU on Redis), and
        # membership itself only expires with the lease.
        lease = coordinator.lease_seconds
        self._watch_every = lease / 3 if 0 < lease < float("inf") else 0.0
        self._watched_at = float("-inf")

    @property
    def leadership(self) -> Leadership | None:
        """The current leadership, when this process leads and may still act."""
        leadership = self._leadership
        return leadership if leadership is not None and leadership.valid() else None

    @property
    def members(self) -> frozenset[str]:
        """The group's members at the last look."""
        return self._seen

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"election-{self.kind}")
        self._thread.daemon = True
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the election thread has reset, released and left (after shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    # -- the election thread -------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self.lifecycle.shutdown.is_set():
                try:
                    self.step()
                    self.outages.recovered("DLM")
                except ServiceUnavailable as exc:
                    self._reset(f"lost the DLM: {exc.message}")
                    self._joined = False
                    self.outages.failed(exc.service or "DLM", exc.message)
                except Exception:
                    LOG.exception("%s election failed; stepping down", self.kind)
                    self._reset("election error")
                self.lifecycle.shutdown.wait(self.interval)
        finally:
            self._reset("stopping")
            self._leave()

    def step(self) -> None:
        """One look: join, renew or try the lease, and (every third of the lease) watch
        the group for shrinkage."""
        if not self._joined:
            self.coordinator.join(self.group)
            self._joined = True
            self._seen = self.coordinator.members(self.group)
        if self._leadership is not None:
            self._renew()
        else:
            self._try_lead()
        now = time.monotonic()
        if now - self._watched_at < self._watch_every:
            return
        self._watched_at = now
        members = self.coordinator.members(self.group)
        gone = self._seen - members
        self._seen = members
        if self.coordinator.member_id not in members:
            # Dropped by the others while we could not heartbeat (frozen, cut off): the
            # others may already have moved on, whatever the lease says here.
            LOG.warning("No longer a member of %s: joining again", self.group)
            self._joined = False
            self._reset("dropped from the group")
        if gone:
            LOG.info("%s group shrank (%s left)", self.kind, ", ".join(sorted(gone)))

    def _try_lead(self) -> None:
        acquired_at = time.monotonic()
        lease = self.coordinator.try_lease(f"inspector-leader-{self.kind}")
        if lease is None:
            return
        self._lease = lease
        trusted_until = acquired_at + self.coordinator.lease_seconds * SAFETY
        try:
            # A process frozen since it took the lease may have lost it already: no term
            # is recorded, nothing is logged or started, under a lease that may be gone.
            if time.monotonic() >= trusted_until:
                LOG.info("%s lease taken too long ago to trust: not leading", self.kind)
                self._release()
                return
            if self._claim is not None:
                term = self._claim(self.kind, self.coordinator.member_id)
            else:
                self._terms += 1
                term = self._terms
        except Exception:
            self._release()
            raise
        leadership = Leadership(
            self.kind, self.coordinator.member_id, term, self.coordinator.lease_seconds, acquired_at
        )
        if not leadership.valid():
            LOG.info("%s term %d claimed too late to trust its lease: not leading", self.kind, term)
            self._release()
            return
        self._leadership = leadership
        LOG.info("Elected %s leader (term %d)", self.kind, term)
        self._body_thread = threading.Thread(
            target=self._lead, args=(leadership,), name=f"{self.kind}-leader", daemon=True
        )
        self._body_thread.start()

    def _lead(self, leadership: Leadership) -> None:
        try:
            self.body(leadership)
        except ServiceUnavailable as exc:
            leadership.reset.set()
            self.outages.give_up(exc.service or "a backend", exc.message)
        except Fenced as exc:
            LOG.info("%s", exc.message)
        except Exception:
            LOG.exception("%s leader failed: stopping", self.kind)
            self.lifecycle.stop(f"{self.kind} leader failed", exit_status=1)
        finally:
            leadership.reset.set()

    def _renew(self) -> None:
        leadership, lease = self._leadership, self._lease
        assert leadership is not None and lease is not None
        started = time.monotonic()
        if leadership.reset.is_set():
            self._reset("the leader's work ended")
        elif lease.renew():
            leadership.renewed(started)
        else:
            self._reset("the lease was lost")

    def _reset(self, why: str) -> None:
        """Stop the singleton (reset flag), wait for its body, then free the lease."""
        leadership, self._leadership = self._leadership, None
        if leadership is None:
            return
        LOG.info("Resetting %s leadership (term %d): %s", self.kind, leadership.term, why)
        leadership.end(why)
        body, self._body_thread = self._body_thread, None
        if body is not None and body is not threading.current_thread():
            body.join(JOIN_TIMEOUT)
            if body.is_alive():
                LOG.error("%s leader still busy after %.0f s", self.kind, JOIN_TIMEOUT)
        self._release()

    def _release(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()

    def _leave(self) -> None:
        if not self._joined:
            return
        self._joined = False
        try:
            self.coordinator.leave(self.group)
        except ServiceUnavailable as exc:
            LOG.warning("Cannot leave group %s: %s", self.group, exc.message)
