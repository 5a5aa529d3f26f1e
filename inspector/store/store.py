"""The Store: the one entry point of the API, the worker, the firewall and the periodic
tasks into the database. Each operation is one statement or one transaction.

The hot path (a node's read, a state change with its request row, the request marks,
data, snapshots, the ramdisk lookup) runs statements compiled once (`prepared`), with
what differs per database chosen once (`dialects`); the rest goes through Core and ORM
queries (`listing`, `rules`, `singletons`, `outbox`, `census`). Connections, retries and
transactions are `access`'s. No module-level instance: build one from the configuration.
"""

import json
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any, cast

from oslo_config import cfg
from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from inspector import errors
from inspector.machine import RequestStatus
from inspector.store import (
    census,
    dialects,
    listing,
    lookup,
    nodes,
    outbox,
    reports,
    requests,
    rules,
    singletons,
    snapshots,
    transitions,
)
from inspector.store import engine as engines
from inspector.store.access import Clock, utcnow
from inspector.store.history import History
from inspector.store.nodes import NodeRecord
from inspector.store.outbox import NotificationRecord
from inspector.store.requests import RequestRecord
from inspector.store.singletons import MarkRecord, RunRecord
from inspector.store.snapshots import SnapshotRecord
from inspector.store.transitions import Change


class Store(History):
    """Every read and write of the service; SQLAlchemy errors leave as InspectorErrors."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        notify: bool = False,
        pool: engines.Pool | None = None,
        bounds: engines.Bounds | None = None,
    ) -> None:
        super().__init__(engine, clock=clock, pool=pool, bounds=bounds)
        #: Write an outbox notification with each start, finish and failure.
        self.notify = notify
        self._dialect = dialects.for_database(self)
        self._load = self.prepare(transitions.LOAD)
        self._finish = self.prepare(transitions.FINISH)
        self._interrupt = self.prepare(transitions.INTERRUPT)
        self._ran = self.prepare(transitions.RAN)
        self._read_data = self.prepare(lookup.READ_DATA)
        self._read_snapshot = self.prepare(snapshots.READ)
        self._enabled_rules = self.prepare(rules.ENABLED)
        #: The upserts: one statement on every database we run on.
        dialect = engine.dialect.name
        self._upsert_data = self.prepare(lookup.UPSERT_STATEMENTS[dialect])
        self._upsert_snapshot = self.prepare(snapshots.UPSERT_STATEMENTS[dialect])

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock = utcnow,
        notify: bool = False,
        pool: engines.Pool | None = None,
        bounds: engines.Bounds | None = None,
    ) -> "Store":
        engine = engines.create_engine(url, pool, bounds)
        return cls(engine, clock=clock, notify=notify, pool=pool, bounds=bounds)

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, *, notify: bool = False) -> "Store":
        """The store of [database] connection, its pools sized and its connections
        bounded by the [database] options."""
        return cls.from_url(
            engines.database_url(conf),
            notify=notify,
            pool=engines.Pool.from_conf(conf),
            bounds=engines.Bounds.from_conf(conf),
        )

    # -- the hot path: statements compiled once ---------------------------------------

    def get_node(self, uuid: str) -> NodeRecord:
        """The node's current row; NotFound when there is none. One statement, no
        transaction around it, prepared once: status reads are the API's hottest path."""
        row = self._dialect.read_node(uuid)
        if row is None:
            raise errors.NotFound(f"node {uuid} not found")
        return NodeRecord(**row)

    def apply(self, change: Change, previous: NodeRecord | None = None) -> NodeRecord:
        """Commit a state change and its request row together: one statement on
        PostgreSQL, a transaction elsewhere (and wherever an outbox row goes with them).

        `expected_version` None creates the node (its first introspection); otherwise
        the change is a compare-and-swap on `previous` (the node as read): NodeBusy
        when the version moved, Conflict when the request id was already recorded.
        """
        if previous is None and change.expected_version is not None:
            previous = self.get_node(change.node_uuid)
        kind = outbox.event_type(change.source, change.target) if self.notify else None
        if kind is None:
            return self._dialect.apply(change, previous)
        now = self.clock()

        def write(connection: Connection) -> NodeRecord:
            node = transitions.apply(connection, change, previous, now)
            outbox.record(
                connection, kind, node, request_id=change.request_id, event=change.event, now=now
            )
            return node

        return self._transaction(write)

    def load(
        self, node_uuid: str, request_id: str
    ) -> tuple[NodeRecord | None, RequestRecord | None]:
        """The node (None when absent) and the request's row (None when new). Read
        without a transaction: the caller holds the node lock, and writes swap on the
        version anyway."""
        row = self._retried(lambda: self._load.first(uuid=node_uuid, request_id=request_id))
        return transitions.loaded(cast(dict[str, Any], row))  # LOAD's anchor: always a row

    def finish_request(self, request_id: str) -> None:
        """Mark an applied request done: one statement, committed on its own."""
        self._run(self._finish, request_id=request_id, now=self.clock())

    def interrupt_request(self, request_id: str) -> None:
        """Mark an applied request whose task a backend outage stopped (see INTERRUPTED)."""
        self._run(self._interrupt, request_id=request_id)

    def mark_ran(self, request_id: str) -> None:
        """Mark a strict event's request whose task finished (see RequestStatus.RAN)."""
        self._run(self._ran, request_id=request_id)

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None:
        """Replace the node's lookup attributes, committed before returning."""
        self._dialect.set_attributes(node_uuid, attributes)

    def lookup_nodes(self, attributes: dict[str, list[str]]) -> dict[str, tuple[int, NodeRecord]]:
        """node uuid -> (number of matching attributes, the node as read), in one query."""
        return self._dialect.lookup_nodes(attributes)

    def store_data(self, node_uuid: str, data: dict, *, processed: bool) -> None:
        """Insert or replace the node's data, committed before returning: one prepared
        upsert in autocommit (one round trip)."""
        values = lookup.encode_data(node_uuid, data, processed=processed, now=self.clock())
        self._run(self._upsert_data, **values)

    def get_data(self, node_uuid: str, *, processed: bool) -> dict | None:
        """The node's raw or processed data; one prepared statement, no transaction."""
        row = self._retried(lambda: self._read_data.first(node_uuid=node_uuid, processed=processed))
        return None if row is None else json.loads(row["data"])

    def save_snapshot(self, node_uuid: str, node: dict, ports: list[dict] | None) -> None:
        """Keep Ironic's node (and ports) as read at the start of its introspection: one
        prepared upsert in autocommit."""
        self._run(self._upsert_snapshot, **snapshots.encode(node_uuid, node, ports, self.clock()))

    def snapshot(self, node_uuid: str) -> SnapshotRecord | None:
        row = self._retried(lambda: self._read_snapshot.first(node_uuid=node_uuid))
        return snapshots.record(row)

    def all_rules(self) -> list[dict]:
        """Every enabled rule in full, in creation order (for evaluation): one prepared
        statement when there is none, as on most sites."""
        uuids = [row["uuid"] for row in self._retried(self._enabled_rules.all)]
        if not uuids:
            return []
        with self.session() as session:
            return rules.full(session, uuids)

    def processed_data(self, *, names: bool = False) -> Iterator[tuple[str, str | None, dict]]:
        """Every node's (uuid, name, processed data), streamed (reports.processed); in a
        transaction (a server-side cursor needs one), rolled back at the end."""
        with self._guarded(), self.engine.connect() as connection:
            yield from reports.processed(connection, names=names)

    # -- Core and ORM queries: requests, the API's lists, lookup attributes, rules ------

    def reject(self, node_uuid: str, request_id: str, event: str, state: str, reason: str) -> None:
        """Record a request the state machine refused (the node's state is unchanged)."""
        with self.session() as session:
            requests.record(
                session,
                request_id=request_id,
                node_uuid=node_uuid,
                event=event,
                source_state=state,
                target_state=state,
                status=RequestStatus.REJECTED,
                version=None,
                reason=reason,
                now=self.clock(),
            )

    def find_request(self, request_id: str) -> RequestRecord | None:
        with self.session() as session:
            return requests.find(session, request_id)

    def history(self, node_uuid: str) -> list[RequestRecord]:
        with self.session() as session:
            return requests.history(session, node_uuid)

    def delete_node(self, uuid: str) -> bool:
        """Remove the node and everything hanging off it; False when it was not there."""
        with self.session() as session:
            return nodes.delete(session, uuid)

    def list_nodes(
        self, *, limit: int, marker: str | None = None, states: list[str] | None = None
    ) -> list[NodeRecord]:
        with self.session() as session:
            return listing.page(session, limit=limit, marker=marker, states=states)

    def attributes(self, node_uuid: str) -> dict[str, list[str]]:
        with self.session() as session:
            return lookup.attributes_of(session, node_uuid)

    def create_rule(self, rule: dict) -> dict:
        with self.session() as session:
            return rules.create(session, rule, now=self.clock())

    def get_rule(self, uuid: str) -> dict:
        with self.session() as session:
            return rules.get(session, uuid)

    def rule_summaries(self) -> list[dict]:
        with self.session() as session:
            return rules.summaries(session)

    def delete_rule(self, uuid: str) -> None:
        with self.session() as session:
            rules.remove(session, uuid)

    def delete_rules(self) -> None:
        with self.session() as session:
            rules.remove_all(session)

    # -- leader-elected singletons ------------------------------------------------------

    def claim_leadership(self, kind: str, holder: str) -> int:
        """A new leadership term for `kind`, fencing off every earlier one."""
        marker = singletons.leader_marker(kind)
        return self._write(singletons.set_mark, marker, holder, self.clock())

    def leadership(self, kind: str) -> MarkRecord | None:
        return self.mark(singletons.leader_marker(kind))

    def mark(self, name: str) -> MarkRecord | None:
        """The named marker (a cluster-wide fact), None when never set."""
        return self._read(singletons.read_mark, name)

    def stamp(self, name: str, holder: str) -> None:
        """Set the named marker to `holder`, now (bumping its term)."""
        self._write(singletons.set_mark, name, holder, self.clock())

    def start_run(self, kind: str, task: str, holder: str, term: int) -> int | None:
        """Record a periodic task run under leadership `term`; None when fenced off."""
        return self._write(
            singletons.start_run, kind, task, holder=holder, term=term, now=self.clock()
        )

    def finish_run(self, run_id: int, outcome: str, *, at: datetime | None = None) -> None:
        """Record a run's end, at `at` when given (never later than now)."""
        now = self.clock()
        self._write(singletons.finish_run, run_id, min(at or now, now), outcome)

    def task_runs(self, task: str | None = None) -> list[RunRecord]:
        return self._read(singletons.runs, task)

    def forget_runs(self, before: datetime) -> int:
        return self._write(singletons.forget_runs, before)

    def last_power_on(self) -> MarkRecord | None:
        return self._read(singletons.read_mark, singletons.THROTTLE)

    def mark_power_on(self, holder: str) -> None:
        self._write(singletons.set_mark, singletons.THROTTLE, holder, self.clock())

    def timed_out_nodes(self, before: datetime) -> list[str]:
        return self._read(singletons.timed_out, before)

    def expired_nodes(self, before: datetime) -> list[str]:
        return self._read(singletons.expired, before)

    def node_uuids(
        self, *, limit: int, after: str | None = None, skip_states: Collection[str] = ()
    ) -> list[str]:
        return self._read(singletons.node_uuids, limit=limit, after=after, skip_states=skip_states)

    def census(self) -> census.Census:
        """Counts for metrics and status: nodes per state, leaders, last runs, backlog."""
        return self._read(census.take)

    # -- the notification outbox ---------------------------------------------------------

    def due_notifications(self, limit: int = 100) -> list[NotificationRecord]:
        return self._read(outbox.due, self.clock(), limit)

    def notification_delivered(self, ident: str) -> None:
        self._write(outbox.delivered, ident, self.clock())

    def postpone_notification(self, ident: str, delay: float, error: str) -> None:
        self._write(outbox.postpone, ident, self.clock(), delay, error)

    def pending_notifications(self) -> int:
        return self._read(outbox.pending)

    def forget_notifications(self, before: datetime) -> int:
        return self._write(outbox.forget_delivered, before)
