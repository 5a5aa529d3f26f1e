"""What one process's PXE firewall looks like, and the table `inspector status` prints.

Plain values and text only: the manager fills a Status, the channel carries it as a
dict, the command prints it.
"""

import dataclasses
import time
from collections.abc import Iterable


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

    @classmethod
    def from_dict(cls, data: dict) -> "Status":
        names = {field.name for field in dataclasses.fields(cls)}
        return cls(**{name: data.get(name) for name in names})

    @property
    def last_sync(self) -> float | None:
        """The newest of the polls and the channel's changes."""
        moments = (self.whitelist_synced_at, self.blacklist_synced_at, self.heard_at)
        return max((t for t in moments if t is not None), default=None)


HEADER = ("HOST", "PROCESS", "DRIVER", "PXE", "LEADER", "WHITELIST", "BLACKLIST", "LAST SYNC")


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
        leader = f"yes (term {status.term})" if status.leader else "no"
        rows.append(
            (
                status.host,
                status.member,
                status.driver,
                "open" if status.open else "closed",
                leader,
                str(status.whitelist),
                str(status.blacklist),
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
