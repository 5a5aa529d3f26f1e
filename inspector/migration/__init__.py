"""Moving from ironic-inspector: its database read (`ironic_inspector_db`), what its records
mean here (`mapping`) and their import into our store (`importer`).

Above the store: it reads the source through SQLAlchemy, read-only, and writes through
the store's sessions and queries; `inspector db import-ironic-inspector` runs it.
"""
