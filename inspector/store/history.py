"""The Store's operations on the introspection history (queries in `introspections`):
recording an ended introspection, the API's reads, drift bases, retention, and the
notification of a drift."""

import json
from datetime import datetime

from sqlalchemy import Connection, select

from inspector.store import introspections, outbox
from inspector.store.access import Access
from inspector.store.introspections import EntryRecord
from inspector.store.models import IntrospectionData
from inspector.store.nodes import NodeRecord

DATA = IntrospectionData.__table__


def _current_data(connection: Connection, node_uuid: str, since: datetime) -> dict:
    """The node's raw and processed data stored since `since` (this introspection's),
    None for either when what is stored is an earlier introspection's. The start and
    the data are stamped by different hosts' clocks: fine while their skew is well
    under an introspection's length (minutes)."""
    rows = connection.execute(
        select(DATA.c.processed, DATA.c.data).where(
            DATA.c.node_uuid == node_uuid, DATA.c.stored_at >= since
        )
    )
    found = {bool(processed): data for processed, data in rows}
    return {"raw": found.get(False), "processed": found.get(True)}


class History(Access):
    """Mixed into the Store: every method is one statement or one transaction."""

    notify: bool

    def keep_introspection(self, node: NodeRecord) -> bool:
        """Record the node's ended introspection with the data it stored (an upsert:
        recording it again replaces it); False when it has no start to key it by."""
        if node.started_at is None:
            return False
        started_at = node.started_at

        def write(connection: Connection) -> None:
            data = _current_data(connection, node.uuid, started_at)
            connection.execute(
                introspections.UPSERT_STATEMENTS[connection.dialect.name],
                {
                    "node_uuid": node.uuid,
                    "started_at": started_at,
                    "source": introspections.INSPECTOR,
                    "state": node.state,
                    "finished_at": node.finished_at,
                    "error": node.error,
                    **data,
                },
            )

        self._write(write)
        return True

    def keep_entry(self, node_uuid: str, entry: dict, raw: dict, processed: dict) -> None:
        """Record an introspection seen elsewhere (Ironic's): `entry` has its source,
        state, started_at, finished_at and error; an upsert as keep_introspection."""
        values = {
            "node_uuid": node_uuid,
            **entry,
            "raw": json.dumps(raw, sort_keys=True),
            "processed": json.dumps(processed, sort_keys=True),
        }
        self._write(lambda c: c.execute(introspections.UPSERT_STATEMENTS[c.dialect.name], values))

    def history_entry(self, node_uuid: str, started_at: datetime) -> EntryRecord | None:
        return self._read(introspections.entry, node_uuid, started_at)

    def newest_finish(self, source: str) -> datetime | None:
        return self._read(introspections.newest_finish, source)

    def history_page(
        self, node_uuid: str, *, limit: int, marker: int | None = None
    ) -> list[EntryRecord]:
        return self._read(introspections.page, node_uuid, limit=limit, marker=marker)

    def has_history(self, node_uuid: str) -> bool:
        return self._read(introspections.has_any, node_uuid)

    def history_data(self, node_uuid: str, ident: int) -> tuple[EntryRecord, dict] | None:
        return self._read(introspections.data, node_uuid, ident)

    def finished_introspections(
        self, node_uuid: str, *, before: datetime | None = None, limit: int = 1
    ) -> list[EntryRecord]:
        return self._read(introspections.finished, node_uuid, before=before, limit=limit)

    def prune_history(self, keep: int) -> int:
        """Every node's history cut to its `keep` newest entries; how many went."""
        total = 0
        while removed := self._write(introspections.prune, keep):
            total += removed
        return total

    def forget_history(self, node_uuid: str) -> int:
        return self._write(introspections.forget, node_uuid)

    def notify_drift(self, node_uuid: str, started_at: datetime | None, drift: dict) -> None:
        """The drift's notification into the outbox (when notifications are on)."""
        if self.notify:
            self._write(outbox.record_drift, node_uuid, started_at, drift, self.clock())
