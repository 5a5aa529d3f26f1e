"""What one process's PXE firewall looks like, and the table `inspector status` prints.

Plain values and text only: the manager fills a Status, the channel carries it as a
dict, the command prints it.
"""

import dataclasses
import time
from collections.abc import Iterable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Status:
    """One process's firewall."""

    host: str
    member: str
    driver: str
    #: Whether the PXE port is open here (the last apply opened it and succeeded).
    open: bool
    leader: bool
    term: int | None
    #: Epoch seconds at which the kernel closes the port unless refreshed.
    open_until: float | None
    whitelist: int
    #: Blacklisted MACs that are not whitelisted.
    blacklist: int
    #: Epoch seconds of the last poll of each list, of the last change heard on the
    #: channel, and of the last apply.
    whitelist_synced_at: float | None
    blacklist_synced_at: float | None
    heard_at: float | None
    applied_at: float | None
    error: str | None
    #: Seconds the last successful apply (sync) took.
    apply_seconds: float | None = None
    #: One of ROLES ("" from a process that does not say).
    role: str = ""
    #: Seconds from Ironic's last change to its rule applied here (the leader's).
    lag: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Status":
        names = {field.name for field in dataclasses.fields(cls)}
        found: dict[str, Any] = {name: data.get(name) for name in names}
        return cls(**found)

    @property
    def last_sync(self) -> float | None:
        """The newest of the polls and the channel's changes."""
        moments = (self.whitelist_synced_at, self.blacklist_synced_at, self.heard_at)
        return max((t for t in moments if t is not None), default=None)


#: leader: open; follower: closed, standing by; closed: failing, stopping, or leading
#: without being able to open.
ROLES = ("leader", "follower", "closed")
HEADER = (
    "HOST",
    "PROCESS",
    "DRIVER",
    "PXE",
    "ROLE",
    "WHITELIST",
    "BLACKLIST",
    "LAG",
    "LAST SYNC",
)


def ago(moment: float | None, now: float) -> str:
    if moment is None:
        return "never"
    return f"{max(0.0, now - moment):.1f} s ago"


def table(statuses: Iterable[Status], now: float | None = None) -> str:
    """One line per process, sorted by host; errors on a line of their own."""
    now = time.time() if now is None else now
    rows = [HEADER]
    errors = []
    for status in sorted(statuses, key=lambda s: (s.host, s.member)):
        role = status.role or ("leader" if status.leader else "follower")
        if status.leader:
            role = f"{role} (term {status.term})"
        rows.append(
            (
                status.host,
                status.member,
                status.driver,
                "open" if status.open else "closed",
                role,
                str(status.whitelist),
                str(status.blacklist),
                "-" if status.lag is None else f"{status.lag:.2f} s",
                ago(status.last_sync, now),
            )
        )
        if status.error:
            errors.append(f"{status.member}: {status.error}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    return "\n".join(lines + [f"error: {e}" for e in errors]) + "\n"
