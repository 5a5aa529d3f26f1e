"""The durable store (SQLAlchemy 2 + alembic): models, engines, queries, migrations.

Nothing outside this package sees SQLAlchemy, but the ironic-inspector importer
(`inspector.migration`), which reads that database with it; there is no module-level engine.
"""

from inspector.store.access import utcnow
from inspector.store.engine import create_engine, database_url, default_url
from inspector.store.nodes import UNSET, NodeRecord, Unset
from inspector.store.requests import RequestRecord
from inspector.store.store import Store
from inspector.store.transitions import Change
from inspector.store.worker_store import WorkerStore

__all__ = [
    "UNSET",
    "Change",
    "NodeRecord",
    "RequestRecord",
    "Store",
    "Unset",
    "WorkerStore",
    "create_engine",
    "database_url",
    "default_url",
    "utcnow",
]
