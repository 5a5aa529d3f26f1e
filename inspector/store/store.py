"""The Store: one engine and its sessions, with node operations as one transaction each.

It owns transaction boundaries and error wrapping; queries live in their own modules
(`nodes`, ...). No module-level instance: build one from the configuration.
"""

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from oslo_config import cfg
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from inspector import errors
from inspector.machine import RequestStatus
from inspector.store import (
    census,
    listing,
    lookup,
    nodes,
    outbox,
    requests,
    rules,
    singletons,
    snapshots,
    transitions,
)
from inspector.store import engine as engines
from inspector.store.coalesce import Coalescer
from inspector.store.nodes import NodeRecord
from inspector.store.outbox import NotificationRecord
from inspector.store.prepared import Prepared
from inspector.store.requests import RequestRecord
from inspector.store.singletons import MarkRecord, RunRecord
from inspector.store.snapshots import SnapshotRecord
from inspector.store.transitions import Change

LOG = logging.getLogger(__name__)

Clock = Callable[[], datetime]

#: Runs of a transaction that MySQL or MariaDB rolled back to break a deadlock: two
#: transactions that each wait on rows the other holds (on a small table InnoDB scans
#: it to delete one node's attributes, and waits on rows another node's transaction
#: wrote); InnoDB ends one, the other goes on.
DEADLOCK_ATTEMPTS = 3


def utcnow() -> datetime:
    """Naive UTC, as every timestamp column stores it."""
    return datetime.now(UTC).replace(tzinfo=None)


class Store:
    """Sessions on one engine; every SQLAlchemy error leaves as an InspectorError."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        notify: bool = False,
        pool: engines.Pool | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        #: Write an outbox notification with each start, finish and failure.
        self.notify = notify
        self._sessions = sessionmaker(bind=engine, expire_on_commit=False)
        #: The autocommit engine's pool is sized as the engine's (`pool`).
        self._autocommit = engines.create_autocommit_engine(engine, pool)
        # PostgreSQL writes a state change and its request row as one statement.
        self._one_statement_swap = engine.dialect.name == "postgresql"
        self._read_node = Prepared(self._autocommit, transitions.READ_NODE)
        #: Concurrent node reads share a statement where an array parameter can carry
        #: their keys (PostgreSQL); elsewhere each read is its own statement.
        self._node_reads = self._read_nodes = None
        #: The ramdisk lookup and the replacement of a node's attributes as statements
        #: of fixed shape, where array parameters carry the pairs (PostgreSQL).
        self._candidates = self._replace_attributes = None
        if engine.dialect.name == "postgresql":
            self._read_nodes = Prepared(self._autocommit, transitions.READ_NODES)
            self._node_reads = Coalescer(self._read_nodes_by_uuid)
            self._candidates = Prepared(self._autocommit, lookup.CANDIDATES)
            self._replace_attributes = Prepared(self._autocommit, lookup.REPLACE_ATTRIBUTES)
        self._load = Prepared(self._autocommit, transitions.LOAD)
        self._finish = Prepared(self._autocommit, transitions.FINISH)
        self._interrupt = Prepared(self._autocommit, transitions.INTERRUPT)
        self._ran = Prepared(self._autocommit, transitions.RAN)
        self._create_node = (
            Prepared(self._autocommit, transitions.CREATE) if self._one_statement_swap else None
        )
        self._read_data = Prepared(self._autocommit, lookup.READ_DATA)
        self._read_snapshot = Prepared(self._autocommit, snapshots.READ)
        self._enabled_rules = Prepared(self._autocommit, rules.ENABLED)
        #: The upserts, where the database has one (else a transaction does it).
        self._upsert_data = self._prepared_upsert(lookup.UPSERT_STATEMENTS)
        self._upsert_snapshot = self._prepared_upsert(snapshots.UPSERT_STATEMENTS)
        #: One compare-and-swap statement per set of optional fields, prepared on use.
        self._swaps: dict[tuple[str, ...], Prepared] = {}

    def _prepared_upsert(self, statements: dict) -> Prepared | None:
        statement = statements.get(self.engine.dialect.name)
        return None if statement is None else Prepared(self._autocommit, statement)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        clock: Clock = utcnow,
        notify: bool = False,
        pool: engines.Pool | None = None,
    ) -> "Store":
        return cls(engines.create_engine(url, pool), clock=clock, notify=notify, pool=pool)

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, *, notify: bool = False) -> "Store":
        """The store of [database] connection, its pools sized by the [database] options."""
        return cls.from_url(
            engines.database_url(conf), notify=notify, pool=engines.Pool.from_conf(conf)
        )

    def __repr__(self) -> str:
        return f"Store({engines.describe(self.engine.url)})"

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block succeeds, rolled back otherwise.

        For this package's query modules; ORM objects must not leave the block.
        """
        with engines.translate_errors(self.engine), self._sessions.begin() as session:
            yield session

    def _read(self, query, *args, **kwargs):
        """Run a read outside a transaction; once more when the server had dropped the
        pooled connection (a database restart), so that no caller sees that."""

        def run():
            with self._autocommit.connect() as connection:
                return query(connection, *args, **kwargs)

        return self._retried(run)

    def _retried(self, read):
        with engines.translate_errors(self.engine):
            for attempt in (1, 2):
                try:
                    return read()
                except DBAPIError as error:
                    if attempt == 2 or not error.connection_invalidated:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the pooled connections; the store can still open new ones."""
        self._autocommit.dispose()
        self.engine.dispose()

    dispose = close

    def get_node(self, uuid: str) -> NodeRecord:
        """The node's current row; NotFound when there is none. One statement, no
        transaction around it, prepared once: status reads are the API's hottest path.
        Reads made at the same time by other threads may share the statement."""
        row = self._read_one(uuid) if self._node_reads is None else self._node_reads.get(uuid)
        if row is None:
            raise errors.NotFound(f"node {uuid} not found")
        return NodeRecord(**row)

    def _read_one(self, uuid: str) -> dict | None:
        return self._retried(lambda: self._read_node.first(uuid=uuid))

    def _read_nodes_by_uuid(self, uuids) -> dict:
        """Rows by uuid, for the coalescer: a lone read runs the one-row statement."""
        if len(uuids) == 1:
            row = self._read_one(uuids[0])
            return {} if row is None else {uuids[0]: row}
        rows = self._retried(lambda: self._read_nodes.all(uuids=list(uuids)))
        return {row["uuid"]: row for row in rows}

    def apply(self, change: Change, previous: NodeRecord | None = None) -> NodeRecord:
        """Commit a state change and its request row in one transaction.

        `expected_version` None creates the node (its first introspection); otherwise
        the change is a compare-and-swap on `previous` (the node as read): NodeBusy
        when the version moved, Conflict when the request id was already recorded.
        """
        if previous is None and change.expected_version is not None:
            previous = self.get_node(change.node_uuid)
        kind = outbox.event_type(change.source, change.target) if self.notify else None
        if self._one_statement_swap and kind is None:
            if previous is not None:
                return self._swap(change, previous)
            return self._create(change)
        now = self.clock()

        def write(connection):
            node = transitions.apply(connection, change, previous, now)
            if kind is not None:
                outbox.record(
                    connection,
                    kind,
                    node,
                    request_id=change.request_id,
                    event=change.event,
                    now=now,
                )
            return node

        return self._transaction(write)

    def _create(self, change: Change) -> NodeRecord:
        """PostgreSQL: the new node and its request row in one statement."""
        node, params = transitions.create_params(change, self.clock())
        with engines.translate_errors(self.engine):
            self._create_node.first(**params)
        return node

    def _swap(self, change: Change, previous: NodeRecord) -> NodeRecord:
        """PostgreSQL: the compare-and-swap and its request row in one statement."""
        now = self.clock()
        fields, params = transitions.swap_params(change, now)
        swap = self._swaps.get(fields)
        if swap is None:
            swap = self._swaps[fields] = Prepared(
                self._autocommit, transitions.swap_statement(fields)
            )
        with engines.translate_errors(self.engine):
            if swap.first(**params) is None:
                raise transitions.busy(change)
        return transitions.swapped(change, previous, now)

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

    def load(
        self, node_uuid: str, request_id: str
    ) -> tuple[NodeRecord | None, RequestRecord | None]:
        """The node (None when absent) and the request's row (None when new). Read
        without a transaction: the caller holds the node lock, and writes swap on the
        version anyway."""
        row = self._retried(lambda: self._load.first(uuid=node_uuid, request_id=request_id))
        return transitions.loaded(row)

    def find_request(self, request_id: str) -> RequestRecord | None:
        with self.session() as session:
            return requests.find(session, request_id)

    def finish_request(self, request_id: str) -> None:
        """Mark an applied request done: one statement, committed on its own."""
        with engines.translate_errors(self.engine):
            self._finish.run(request_id=request_id, now=self.clock())

    def interrupt_request(self, request_id: str) -> None:
        """Mark an applied request whose task a backend outage stopped (see INTERRUPTED)."""
        with engines.translate_errors(self.engine):
            self._interrupt.run(request_id=request_id)

    def mark_ran(self, request_id: str) -> None:
        """Mark a strict event's request whose task finished (see requests.RAN)."""
        with engines.translate_errors(self.engine):
            self._ran.run(request_id=request_id)

    def history(self, node_uuid: str) -> list[RequestRecord]:
        with self.session() as session:
            return requests.history(session, node_uuid)

    def delete_node(self, uuid: str) -> bool:
        """Remove the node and everything hanging off it; False when it was not there."""
        with self.session() as session:
            return nodes.delete(session, uuid)

    # -- API reads and writes ------------------------------------------------------------

    def list_nodes(
        self, *, limit: int, marker: str | None = None, states: list[str] | None = None
    ) -> list[NodeRecord]:
        with self.session() as session:
            return listing.page(session, limit=limit, marker=marker, states=states)

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None:
        """Replace the node's lookup attributes, committed before returning."""
        if self._replace_attributes is None:
            self._write(lookup.set_attributes, node_uuid, attributes)
            return
        names, values = lookup.pairs(attributes)
        with engines.translate_errors(self.engine):
            self._replace_attributes.run(node_uuid=node_uuid, names=names, values=values)

    def attributes(self, node_uuid: str) -> dict[str, list[str]]:
        with self.session() as session:
            return lookup.attributes_of(session, node_uuid)

    def lookup_nodes(self, attributes: dict[str, list[str]]) -> dict[str, tuple[int, NodeRecord]]:
        """node uuid -> (number of matching attributes, the node as read), in one query."""
        if self._candidates is None:
            return self._read(lookup.candidates, attributes)
        names, values = lookup.pairs(attributes)
        if not names:
            return {}
        return lookup.found(self._retried(lambda: self._candidates.all(names=names, values=values)))

    def store_data(self, node_uuid: str, data: dict, *, processed: bool) -> None:
        """Insert or replace the node's data, committed before returning: one prepared
        statement in autocommit where the database has an upsert (one round trip), else
        a transaction."""
        now = self.clock()
        if self._upsert_data is None:
            self._write(lookup.store_data, node_uuid, data, processed=processed, now=now)
            return
        values = lookup.encode_data(node_uuid, data, processed=processed, now=now)
        with engines.translate_errors(self.engine):
            self._upsert_data.run(**values)

    def get_data(self, node_uuid: str, *, processed: bool) -> dict | None:
        """The node's raw or processed data; one prepared statement, no transaction."""
        row = self._retried(lambda: self._read_data.first(node_uuid=node_uuid, processed=processed))
        return None if row is None else json.loads(row["data"])

    def save_snapshot(self, node_uuid: str, node: dict, ports: list[dict] | None) -> None:
        """Keep Ironic's node (and ports) as read at the start of its introspection: one
        prepared statement in autocommit where the database has an upsert, else a
        transaction."""
        if self._upsert_snapshot is None:
            self._write(snapshots.save, node_uuid, node, ports, self.clock())
            return
        values = snapshots.encode(node_uuid, node, ports, self.clock())
        with engines.translate_errors(self.engine):
            self._upsert_snapshot.run(**values)

    def snapshot(self, node_uuid: str) -> SnapshotRecord | None:
        row = self._retried(lambda: self._read_snapshot.first(node_uuid=node_uuid))
        return snapshots.record(row)

    def create_rule(self, rule: dict) -> dict:
        with self.session() as session:
            return rules.create(session, rule, now=self.clock())

    def get_rule(self, uuid: str) -> dict:
        with self.session() as session:
            return rules.get(session, uuid)

    def rule_summaries(self) -> list[dict]:
        with self.session() as session:
            return rules.summaries(session)

    def all_rules(self) -> list[dict]:
        """Every enabled rule in full, in creation order (for evaluation): one prepared
        statement when there is none, as on most sites."""
        uuids = [row["uuid"] for row in self._retried(self._enabled_rules.all)]
        if not uuids:
            return []
        with self.session() as session:
            return rules.full(session, uuids)

    def delete_rule(self, uuid: str) -> None:
        with self.session() as session:
            rules.remove(session, uuid)

    def delete_rules(self) -> None:
        with self.session() as session:
            rules.remove_all(session)

    # -- leader-elected singletons ------------------------------------------------------

    def _write(self, query, *args, **kwargs):
        return self._transaction(lambda connection: query(connection, *args, **kwargs))

    def _transaction(self, work):
        """work(connection) in a transaction, committed; run again when MySQL or MariaDB
        ended it to break a deadlock (it was rolled back: nothing of it was kept)."""
        with engines.translate_errors(self.engine):
            for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
                try:
                    with self.engine.begin() as connection:
                        return work(connection)
                except DBAPIError as error:
                    if attempt == DEADLOCK_ATTEMPTS or not engines.is_deadlock(self.engine, error):
                        raise
                    LOG.info("Database deadlock: the transaction runs again (%s)", error.orig)
        raise AssertionError("unreachable")

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

    def finish_run(self, run_id: int, outcome: str, *, at=None) -> None:
        """Record a run's end, at `at` when given (never later than now)."""
        now = self.clock()
        self._write(singletons.finish_run, run_id, min(at or now, now), outcome)

    def task_runs(self, task: str | None = None) -> list[RunRecord]:
        return self._read(singletons.runs, task)

    def forget_runs(self, before) -> int:
        return self._write(singletons.forget_runs, before)

    def last_power_on(self) -> MarkRecord | None:
        return self._read(singletons.read_mark, singletons.THROTTLE)

    def mark_power_on(self, holder: str) -> None:
        self._write(singletons.set_mark, singletons.THROTTLE, holder, self.clock())

    def timed_out_nodes(self, before) -> list[str]:
        return self._read(singletons.timed_out, before)

    def expired_nodes(self, before) -> list[str]:
        return self._read(singletons.expired, before)

    def node_uuids(self, *, limit: int, after: str | None = None, skip_states=()) -> list[str]:
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

    def forget_notifications(self, before) -> int:
        return self._write(outbox.forget_delivered, before)

    def ping(self) -> None:
        """One round trip to the database (health check); ServiceUnavailable if down."""
        with engines.translate_errors(self.engine), self._autocommit.connect() as connection:
            connection.exec_driver_sql("SELECT 1")
