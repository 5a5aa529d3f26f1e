"""The Ironic history task ([ironic_history] enabled): Ironic's own (built-in) inspections
kept in the introspection history, each with its hardware drift, notification and count.

A periodic leader's task: one fields-limited listing of Ironic's nodes sorted by
inspection_finished_at, read back only to the newest inspection already kept, then one
GET /v1/nodes/<id>/inventory per newly inspected node. Never changes anything in Ironic.
"""

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from inspector.coordination.election import Leadership
from inspector.processing import drift
from inspector.store import Store
from inspector.store.introspections import IRONIC

LOG = logging.getLogger(__name__)

#: Page size of the listing of Ironic's nodes.
PAGE_SIZE = 1000


class IronicHistory:
    """Keeps what Ironic's inspections found, as entries of source `ironic`."""

    def __init__(
        self,
        store: Store,
        ironic: Any,
        *,
        drift_found: Callable[[dict[str, int]], None] | None = None,
    ) -> None:
        self.store = store
        self.ironic = ironic
        #: Counts the drifts found (the worker's metric), when given.
        self.drift_found = drift_found

    def run(self, leadership: Leadership) -> str:
        """One look at Ironic: the inspections finished since the newest one kept."""
        since = self.store.newest_finish(IRONIC)
        fresh = self.ironic.inspected_since(since, page_size=PAGE_SIZE)
        kept = drifted = 0
        for node_uuid, finished in reversed(fresh):  # oldest first: each drifts from the last
            leadership.check()
            if self.store.history_entry(node_uuid, finished) is not None:
                continue  # kept by the previous run (the one at `since` itself)
            found = self.keep(node_uuid, finished)
            kept += found is not None
            drifted += bool(found and found["changes"])
        if kept:
            LOG.info("Kept %d inspection(s) of Ironic, %d with hardware drift", kept, drifted)
        return f"{kept} Ironic inspections kept, {drifted} with drift"

    def keep(self, node_uuid: str, finished: datetime) -> dict | None:
        """Keep the node's inspection that finished at `finished`; its drift, None when
        Ironic has no inventory for it (removed, or not stored)."""
        stored = self.ironic.get_inventory(node_uuid)
        if not stored or not isinstance(stored.get("inventory"), dict):
            return None
        raw = {**(stored.get("plugin_data") or {}), "inventory": stored["inventory"]}
        base: tuple[int, dict[str, Any]] | None = None
        for entry in self.store.finished_introspections(node_uuid, before=finished):
            data = self.store.history_data(node_uuid, entry.id)
            if data is not None and data[1]["raw"] is not None:
                base = (entry.id, data[1]["raw"])
            break
        base_id, base_data = base or (None, None)
        found = drift.document(base_id, base_data, raw)
        # Ironic clears inspection_started_at at the end: the end stands for both.
        kept = {
            "source": IRONIC,
            "state": "finished",
            "started_at": finished,
            "finished_at": finished,
            "error": None,
        }
        self.store.keep_entry(node_uuid, kept, raw, {**raw, drift.KEY: found})
        if found["changes"]:
            self.store.notify_drift(node_uuid, finished, found)
            if self.drift_found is not None:
                self.drift_found(found["summary"])
        return found
