"""Counts for metrics and status reports: nodes per state, leaders, the last run of
each periodic task, the notification backlog (an inspector.census.Census). Reads only."""

from sqlalchemy import Connection, func, select

from inspector.census import Census
from inspector.store import outbox
from inspector.store.models import Marker, Node, TaskRun

NODES, MARKERS, RUNS = Node.__table__, Marker.__table__, TaskRun.__table__


def take(connection: Connection) -> Census:
    states: dict[str, int] = {
        state: count
        for state, count in connection.execute(
            select(NODES.c.state, func.count()).group_by(NODES.c.state)
        )
    }
    leaders = {
        row.name.split(":", 1)[1]: (row.holder, row.term, row.at)
        for row in connection.execute(select(MARKERS).where(MARKERS.c.name.like("leader:%")))
    }
    latest = select(RUNS.c.task, func.max(RUNS.c.id).label("id")).group_by(RUNS.c.task).subquery()
    runs = {
        row.task: (row.started_at, row.finished_at, row.outcome)
        for row in connection.execute(select(RUNS).join(latest, RUNS.c.id == latest.c.id))
    }
    return Census(states, leaders, runs, outbox.pending(connection))
