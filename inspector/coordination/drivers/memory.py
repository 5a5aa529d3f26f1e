"""memory://: locks and groups shared by the threads of one process (`inspector all`).

Features: non-blocking locks that never expire (a thread that dies takes its process
with it), groups. Options: none. Requires: nothing. `inspector api` and `inspector
worker` refuse it: their work is shared with other processes.
"""

import threading

from inspector.coordination.base import Coordinator, Lease


class LocalCoordinator(Coordinator):
    """memory://: locks shared by the threads of one process (`inspector all`)."""

    is_single_process = True
    is_single_host = True
    lease_seconds = float("inf")

    def __init__(self, member_id: str = "local") -> None:
        self.member_id = member_id
        self._guard = threading.Lock()
        self._held: set[str] = set()
        self._groups: dict[str, set[str]] = {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def try_lease(self, name: str) -> Lease | None:
        with self._guard:
            if name in self._held:
                return None
            self._held.add(name)
        return _LocalLease(self, name)

    def _drop(self, name: str) -> None:
        with self._guard:
            self._held.discard(name)

    def join(self, group: str) -> None:
        with self._guard:
            self._groups.setdefault(group, set()).add(self.member_id)

    def leave(self, group: str) -> None:
        with self._guard:
            self._groups.get(group, set()).discard(self.member_id)

    def members(self, group: str) -> frozenset[str]:
        with self._guard:
            return frozenset(self._groups.get(group, ()))


class _LocalLease(Lease):
    def __init__(self, owner: LocalCoordinator, name: str) -> None:
        self._owner = owner
        self._name = name
        self._released = False

    def renew(self) -> bool:
        return not self._released

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._owner._drop(self._name)
