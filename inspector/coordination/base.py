"""What the service needs of a DLM: the Coordinator and Lease interfaces every driver
(inspector.coordination.drivers) implements."""

import contextlib
from collections.abc import Iterator


class Lease:
    """A named lock held until released, or until its holder stops renewing it."""

    def renew(self) -> bool:
        """Extend the lease; False when it was lost (expired and maybe taken)."""
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError


class Coordinator:
    """What the workers need of a DLM: start, stop, non-blocking named locks (leases)
    and groups."""

    #: True when the locks only exclude threads of this process.
    is_single_process = False
    #: True when the locks only exclude processes of this host.
    is_single_host = False
    #: Seconds after which a dead holder's leases and membership expire.
    lease_seconds: float = 0.0
    member_id: str = ""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        """Context manager yielding True when the lock is held (released on exit),
        False when someone else holds it. Never blocks waiting for the lock."""
        lease = self.try_lease(name)
        try:
            yield lease is not None
        finally:
            if lease is not None:
                lease.release()

    def try_lease(self, name: str) -> Lease | None:
        """The lease on name, or None when another member holds it. Never blocks."""
        raise NotImplementedError

    def join(self, group: str) -> None:
        """Become a member of group (created when missing); joining twice is harmless."""
        raise NotImplementedError

    def leave(self, group: str) -> None:
        """Leave group; leaving a group one is not in is harmless."""
        raise NotImplementedError

    def members(self, group: str) -> frozenset[str]:
        """The live members of group (dead ones drop out after lease_seconds)."""
        raise NotImplementedError
