"""The Store: one engine and its sessions, with node operations as one transaction each.

It owns transaction boundaries and error wrapping; queries live in their own modules
(`nodes`, ...). No module-level instance: build one from the configuration.
"""

import contextlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from inspector.store import engine as engines
from inspector.store import nodes
from inspector.store.nodes import UNSET, NodeRecord, Unset

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """Naive UTC, as every timestamp column stores it."""
    return datetime.now(UTC).replace(tzinfo=None)


class Store:
    """Sessions on one engine; every SQLAlchemy error leaves as an InspectorError."""

    def __init__(self, engine: Engine, *, clock: Clock = utcnow) -> None:
        self.engine = engine
        self.clock = clock
        self._sessions = sessionmaker(bind=engine, expire_on_commit=False)

    @classmethod
    def from_url(cls, url: str, *, clock: Clock = utcnow) -> "Store":
        return cls(engines.create_engine(url), clock=clock)

    def __repr__(self) -> str:
        return f"Store({engines.describe(self.engine.url)})"

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block succeeds, rolled back otherwise.

        For this package's query modules; ORM objects must not leave the block.
        """
        with engines.translate_errors(self.engine), self._sessions.begin() as session:
            yield session

    def close(self) -> None:
        """Close the pooled connections; the store can still open new ones."""
        self.engine.dispose()

    dispose = close

    def create_node(
        self,
        uuid: str,
        state: str,
        *,
        started_at: datetime | None = None,
        manage_boot: bool = True,
    ) -> NodeRecord:
        """Insert a node at version 1; Conflict when it already exists."""
        with self.session() as session:
            return nodes.create(
                session,
                uuid,
                state,
                now=self.clock(),
                started_at=started_at,
                manage_boot=manage_boot,
            )

    def get_node(self, uuid: str) -> NodeRecord:
        """The node's current row; NotFound when there is none."""
        with self.session() as session:
            return nodes.get(session, uuid)

    def set_state(
        self,
        node_uuid: str,
        expected_version: int,
        new_state: str,
        *,
        error: str | Unset | None = UNSET,
        started_at: datetime | Unset | None = UNSET,
        finished_at: datetime | Unset | None = UNSET,
    ) -> int:
        """Compare-and-swap the state; the new version, or NodeBusy / NotFound."""
        with self.session() as session:
            return nodes.set_state(
                session,
                node_uuid,
                expected_version,
                new_state,
                now=self.clock(),
                error=error,
                started_at=started_at,
                finished_at=finished_at,
            )
