"""The census: counts for metrics and status reports (nodes per state, leaders, the last
run of each periodic task, the notification backlog), as the store reads them
(inspector.store.census) and as `inspector status` reads a SQLite database without the
store (inspector.cmd.status_read). A record only: nothing here reads a database."""

import dataclasses
from datetime import datetime


@dataclasses.dataclass(frozen=True)
class Census:
    nodes_by_state: dict[str, int]
    leaders: dict[str, tuple[str, int, datetime]]  # kind -> (holder, term, since)
    last_runs: dict[str, tuple[datetime, datetime | None, str | None]]  # task -> run
    notifications_pending: int
