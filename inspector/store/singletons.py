"""Queries of the leader-elected singletons: leadership terms (fencing tokens), periodic
task runs, the reboot throttle's last power-on, and the nodes each clean-up task selects.
"""

import dataclasses
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Connection, and_, delete, insert, or_, select, update

from inspector.machine import FINAL_STATES, TIMED
from inspector.store.models import Marker, Node, TaskRun

MARKERS = Marker.__table__
RUNS = TaskRun.__table__
NODES = Node.__table__

#: The marker holding the reboot throttle's last power-on.
THROTTLE = "reboot-throttle"


def leader_marker(kind: str) -> str:
    return f"leader:{kind}"


@dataclasses.dataclass(frozen=True)
class RunRecord:
    id: int
    task: str
    holder: str
    term: int
    started_at: datetime
    finished_at: datetime | None
    outcome: str | None


@dataclasses.dataclass(frozen=True)
class MarkRecord:
    name: str
    term: int
    holder: str
    at: datetime


def read_mark(connection: Connection, name: str) -> MarkRecord | None:
    row = connection.execute(select(MARKERS).where(MARKERS.c.name == name)).first()
    return None if row is None else MarkRecord(row.name, row.term, row.holder, row.at)


def set_mark(connection: Connection, name: str, holder: str, now: datetime) -> int:
    """Bump the marker's term (creating it at 1), stamp it; the new term."""
    changed = connection.execute(
        update(MARKERS)
        .where(MARKERS.c.name == name)
        .values(term=MARKERS.c.term + 1, holder=holder, at=now)
    ).rowcount
    if not changed:
        connection.execute(insert(MARKERS).values(name=name, term=1, holder=holder, at=now))
    return connection.execute(select(MARKERS.c.term).where(MARKERS.c.name == name)).scalar_one()


#: Servers whose transactions read a row without locking it: `holds(lock=True)` locks it
#: there (SQLite's one writer at a time needs no lock).
ROW_LOCKING = ("postgresql", "mysql", "mariadb")


def holds(connection: Connection, kind: str, term: int, *, lock: bool = False) -> bool:
    """Whether `term` is still the singleton's current leadership term; with `lock`, the
    leadership row stays locked until the caller's transaction ends, so that no new term
    begins before what the caller writes under this one is committed."""
    query = select(MARKERS.c.term).where(MARKERS.c.name == leader_marker(kind))
    if lock and connection.dialect.name in ROW_LOCKING:
        query = query.with_for_update()
    return connection.execute(query).scalar() == term


def start_run(
    connection: Connection, kind: str, task: str, *, holder: str, term: int, now: datetime
) -> int | None:
    """Record a run's start when `term` still leads (in the caller's transaction, with
    the leadership row locked): its id, or None when fenced off."""
    if not holds(connection, kind, term, lock=True):
        return None
    # The new id as each dialect gets it: RETURNING where the server has it (PostgreSQL,
    # SQLite, MariaDB), the connection's last insert id on MySQL, which has none.
    result = connection.execute(
        insert(RUNS).values(task=task, holder=holder, term=term, started_at=now)
    )
    return result.inserted_primary_key[0]  # type: ignore[index]  # an INSERT's result has it


def finish_run(connection: Connection, run_id: int, now: datetime, outcome: str) -> None:
    connection.execute(
        update(RUNS).where(RUNS.c.id == run_id).values(finished_at=now, outcome=outcome[:2000])
    )


def runs(connection: Connection, task: str | None = None) -> list[RunRecord]:
    query = select(RUNS).order_by(RUNS.c.started_at, RUNS.c.id)
    if task is not None:
        query = query.where(RUNS.c.task == task)
    return [RunRecord(**row._mapping) for row in connection.execute(query)]


def forget_runs(connection: Connection, before: datetime) -> int:
    return connection.execute(delete(RUNS).where(RUNS.c.started_at < before)).rowcount


def timed_out(connection: Connection, before: datetime) -> list[str]:
    """Nodes in a state that times out whose clock (the column its timeout counts from,
    `machine.TIMED`: the introspection's start, or the state's entry) is before `before`."""
    query = select(NODES.c.uuid).where(
        or_(
            *(
                and_(
                    NODES.c.state.in_(sorted(s.value for s in states)),
                    NODES.c[clock.value] < before,
                )
                for clock, states in TIMED.items()
                if states
            )
        )
    )
    return list(connection.execute(query.order_by(NODES.c.uuid)).scalars())


def expired(connection: Connection, before: datetime) -> list[str]:
    """Nodes whose introspection ended (finished or error) before `before`."""
    query = select(NODES.c.uuid).where(
        NODES.c.state.in_([s.value for s in FINAL_STATES]), NODES.c.finished_at < before
    )
    return list(connection.execute(query.order_by(NODES.c.uuid)).scalars())


def node_uuids(
    connection: Connection,
    *,
    limit: int,
    after: str | None = None,
    skip_states: Collection[str] = (),
) -> list[str]:
    """One page of node UUIDs in UUID order, after `after`, without `skip_states`."""
    query = select(NODES.c.uuid).order_by(NODES.c.uuid).limit(limit)
    if after is not None:
        query = query.where(NODES.c.uuid > after)
    if skip_states:
        query = query.where(NODES.c.state.not_in([str(s) for s in skip_states]))
    return list(connection.execute(query).scalars())
