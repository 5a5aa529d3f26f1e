"""The words of a state's entry effects: which node columns a commit writes and how, what
that does to the introspection's run, which column a timeout counts from.

Words only: `inspector.machine.ENTRIES` says which state has which; the store writes them.
"""

import dataclasses
import enum


class Value(enum.StrEnum):
    """What entering a state writes into a node column (see Writes)."""

    NOW = "now"  # the commit's time
    CLEARED = "cleared"  # nothing (NULL)
    REASON = "reason"  # the error message: the committer's, else the transition's


@dataclasses.dataclass(frozen=True)
class Writes:
    """The node columns a commit writes besides its state and version (None: kept)."""

    started_at: Value | None = None
    finished_at: Value | None = None
    error: Value | None = None

    def columns(self) -> dict[str, Value]:
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name))}


class Run(enum.StrEnum):
    """What a commit does to the introspection's run (from the columns it writes)."""

    STARTS = "starts"  # a new run: its start stamped, the last one's end and error cleared
    REOPENS = "reopens"  # the same run again: its end and error cleared
    GOES_ON = "goes on"
    ENDS = "ends"  # its end stamped


@dataclasses.dataclass(frozen=True)
class Effects:
    """What one commit into a state writes, and the notification (event type) it sends."""

    writes: Writes = Writes()
    notifies: str | None = None

    @property
    def run(self) -> Run:
        if self.writes.started_at is Value.NOW:
            return Run.STARTS
        if self.writes.finished_at is Value.NOW:
            return Run.ENDS
        return Run.REOPENS if self.writes.finished_at is Value.CLEARED else Run.GOES_ON

    @property
    def ends(self) -> bool:
        return self.run is Run.ENDS


class Clock(enum.StrEnum):
    """The node column a state's timeout counts from."""

    STARTED = "started_at"  # the introspection's start
    ENTERED = "updated_at"  # the node's last change: its entry into the state


#: A commit that writes no column but its state and version, and sends nothing.
NOTHING = Effects()
