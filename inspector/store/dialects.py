"""What the Store does differently per database, chosen once (`for_database`): PostgreSQL's
single statements against the portable Core statements that SQLite and MySQL/MariaDB run.

PostgreSQL writes a state change with its request row as one statement (a data-modifying
CTE, atomic without a transaction around it), carries a lookup's pairs and a batch of
coalesced node reads as array parameters, and replaces a node's attributes in one
statement. Elsewhere a transaction does the write and each read is its own statement.
The answers are the same on every database (tests/contract/test_store.py).
"""

from collections.abc import Sequence
from typing import Any

from inspector.store import lookup, transitions
from inspector.store.access import Access
from inspector.store.coalesce import Coalescer
from inspector.store.nodes import NodeRecord
from inspector.store.prepared import Prepared
from inspector.store.transitions import Change


class Portable:
    """SQLite, MySQL and MariaDB: a node read per statement, writes in a transaction."""

    def __init__(self, access: Access) -> None:
        self.access = access
        self._read_node = access.prepare(transitions.READ_NODE)

    def read_node(self, uuid: str) -> dict | None:
        """The node's row; None when there is none."""
        return self.access._retried(lambda: self._read_node.first(uuid=uuid))

    def apply(self, change: Change, previous: NodeRecord | None) -> NodeRecord:
        """The change and its request row, committed together (see `Store.apply`)."""
        now = self.access.clock()
        return self.access._write(transitions.apply, change, previous, now)

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None:
        self.access._write(lookup.set_attributes, node_uuid, attributes)

    def lookup_nodes(self, attributes: dict[str, list[str]]) -> dict[str, tuple[int, NodeRecord]]:
        return self.access._read(lookup.candidates, attributes)


class Postgresql(Portable):
    """PostgreSQL: every one of these is one prepared statement, in autocommit."""

    def __init__(self, access: Access) -> None:
        super().__init__(access)
        self._read_nodes = access.prepare(transitions.READ_NODES)
        #: Concurrent node reads share a statement: an array parameter carries their keys.
        self._node_reads = Coalescer(self._read_nodes_by_uuid)
        self._create = access.prepare(transitions.CREATE)
        #: One compare-and-swap statement per set of optional fields, prepared on use.
        self._swaps: dict[tuple[str, ...], Prepared] = {}
        #: The ramdisk lookup and the replacement of a node's attributes as statements
        #: of fixed shape, where array parameters carry the pairs.
        self._candidates = access.prepare(lookup.CANDIDATES)
        self._replace_attributes = access.prepare(lookup.REPLACE_ATTRIBUTES)

    def read_node(self, uuid: str) -> dict | None:
        """Reads made at the same time by other threads may share the statement."""
        return self._node_reads.get(uuid)

    def _read_nodes_by_uuid(self, uuids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Rows by uuid, for the coalescer: a lone read runs the one-row statement."""
        if len(uuids) == 1:
            row = super().read_node(uuids[0])
            return {} if row is None else {uuids[0]: row}
        rows = self.access._retried(lambda: self._read_nodes.all(uuids=list(uuids)))
        return {row["uuid"]: row for row in rows}

    def apply(self, change: Change, previous: NodeRecord | None) -> NodeRecord:
        """The change and its request row as one statement (`transitions.swap_statement`,
        or `CREATE` for a new node)."""
        now = self.access.clock()
        if previous is None:
            node, params = transitions.create_params(change, now)
            self.access._first(self._create, **params)
            return node
        fields, params = transitions.swap_params(change, now)
        swap = self._swaps.get(fields)
        if swap is None:
            swap = self._swaps[fields] = self.access.prepare(transitions.swap_statement(fields))
        # The statement answers the request row it wrote: none when the version moved.
        if self.access._first(swap, **params) is None:
            raise transitions.busy(change)
        return transitions.swapped(change, previous, now)

    def set_attributes(self, node_uuid: str, attributes: dict[str, list[str]]) -> None:
        names, values = lookup.pairs(attributes)
        self.access._run(self._replace_attributes, node_uuid=node_uuid, names=names, values=values)

    def lookup_nodes(self, attributes: dict[str, list[str]]) -> dict[str, tuple[int, NodeRecord]]:
        names, values = lookup.pairs(attributes)
        if not names:
            return {}
        rows = self.access._retried(lambda: self._candidates.all(names=names, values=values))
        return lookup.found(rows)


def for_database(access: Access) -> Portable:
    """The statements of `access`'s database."""
    if access.engine.dialect.name == "postgresql":
        return Postgresql(access)
    return Portable(access)
