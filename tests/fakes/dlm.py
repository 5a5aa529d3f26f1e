"""A DLM shared by several simulated processes of one test: groups, leases, crashes.

`FakeDLM().member("a")` is one process's Coordinator. `crash()` makes a member vanish
the way a kill -9 does once its lease expired: its memberships and leases are gone;
`cut()` makes its calls fail like a partition (ServiceUnavailable).
"""

import threading

from inspector.coordination.base import Coordinator, Lease
from inspector.errors import ServiceUnavailable


class FakeDLM:
    def __init__(self, lease_seconds: float = 3.0) -> None:
        self.lease_seconds = lease_seconds
        self.guard = threading.Lock()
        self.groups: dict[str, set[str]] = {}
        self.leases: dict[str, str] = {}

    def member(self, member_id: str) -> "FakeMember":
        return FakeMember(self, member_id)


class FakeLease(Lease):
    def __init__(self, member: "FakeMember", name: str) -> None:
        self.member = member
        self.name = name

    def renew(self) -> bool:
        self.member.check()
        with self.member.dlm.guard:
            return self.member.dlm.leases.get(self.name) == self.member.member_id

    def release(self) -> None:
        with self.member.dlm.guard:
            if self.member.dlm.leases.get(self.name) == self.member.member_id:
                del self.member.dlm.leases[self.name]


class FakeMember(Coordinator):
    def __init__(self, dlm: FakeDLM, member_id: str) -> None:
        self.dlm = dlm
        self.member_id = member_id
        self.lease_seconds = dlm.lease_seconds
        self.is_cut = False

    def check(self) -> None:
        if self.is_cut:
            raise ServiceUnavailable("the DLM is cut off", service="DLM")

    def crash(self) -> None:
        """Forget this member everywhere, as its expired lease and heartbeat would."""
        with self.dlm.guard:
            for members in self.dlm.groups.values():
                members.discard(self.member_id)
            for name in [n for n, holder in self.dlm.leases.items() if holder == self.member_id]:
                del self.dlm.leases[name]

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def try_lease(self, name: str) -> Lease | None:
        self.check()
        with self.dlm.guard:
            if self.dlm.leases.setdefault(name, self.member_id) != self.member_id:
                return None
        return FakeLease(self, name)

    def join(self, group: str) -> None:
        self.check()
        with self.dlm.guard:
            self.dlm.groups.setdefault(group, set()).add(self.member_id)

    def leave(self, group: str) -> None:
        self.check()
        with self.dlm.guard:
            self.dlm.groups.get(group, set()).discard(self.member_id)

    def members(self, group: str) -> frozenset[str]:
        self.check()
        with self.dlm.guard:
            return frozenset(self.dlm.groups.get(group, ()))
