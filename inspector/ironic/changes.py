"""What changed in Ironic since a moment, read from its listings sorted by a timestamp,
newest first, until the first older item: the ports created or updated (sorted by
created_at, then by updated_at), the nodes whose built-in inspection finished (by
inspection_finished_at). A few short requests when little changed, whatever the number
of items. Owns those sorted listings and where to stop reading them; the client sends
the requests (`Paginate`: its paginated GET). Deleted items leave no trace there.
"""

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from inspector.ironic.model import IronicPort, timestamp

#: Ports per page: Ironic's cost grows with the ports it sends (it loads each one's
#: node), and a listing of what changed is short.
CHANGES_PAGE_SIZE = 50

#: (kind, path, query, page size) -> Ironic's items of that kind, across pages.
Paginate = Callable[[str, str, dict[str, Any], int], Iterator[dict]]


def changed_ports(
    paginate: Paginate, since: datetime, page_size: int = CHANGES_PAGE_SIZE
) -> list[tuple[IronicPort, datetime]] | None:
    """The ports created or updated at or after `since` (naive UTC), each with that
    moment: the listing by created_at, then by updated_at, each read until the first
    older port. Never-updated ports (a NULL updated_at) come last in a descending sort on
    MySQL/MariaDB and SQLite; None when Ironic's database sorts them first (PostgreSQL),
    which puts its updates out of reach of a short read."""
    found = []
    for key in ("created_at", "updated_at"):
        for index, item in enumerate(_ports_by(paginate, key, "desc", page_size)):
            stamp = timestamp(item.get(key))
            if stamp is None and index == 0 and key == "updated_at":
                if _first_stamp(_ports_by(paginate, key, "asc", 1), key) is not None:
                    return None  # NULLs first in "desc": the updated ports follow them
            if stamp is None or stamp < since:
                break
            found.append((IronicPort.from_ironic(item), stamp))
    return found


def last_change(paginate: Paginate) -> datetime | None:
    """The newest created_at or updated_at of any port (None: no port), one port read
    from each listing."""
    stamps = [
        _first_stamp(_ports_by(paginate, key, "desc", 1), key)
        for key in ("created_at", "updated_at")
    ]
    return max((stamp for stamp in stamps if stamp is not None), default=None)


_INSPECTED = "inspection_finished_at"


def inspected_since(
    paginate: Paginate, since: datetime | None, page_size: int
) -> list[tuple[str, datetime]]:
    """(uuid, inspection_finished_at) of the nodes whose built-in inspection finished
    at or after `since` (all with None), newest first: one listing of two fields sorted
    by inspection_finished_at, newest first, read until the first older node. Ironic on
    MySQL/MariaDB or SQLite sorts the never-inspected nodes (NULL) last there, so the
    first of them ends the read too. On PostgreSQL they come first, and a page that
    ends on one makes Ironic's next page skip every node above it in id, whatever its
    inspection (oslo.db compares a NULL marker's id only): there the listing is read
    the other way, oldest first, up to the first never-inspected node."""
    found = []
    for index, item in enumerate(_nodes_by(paginate, "desc", page_size)):
        finished = timestamp(item.get(_INSPECTED))
        if finished is None:
            if index == 0 and _first_stamp(_nodes_by(paginate, "asc", 1), _INSPECTED):
                return _inspected_oldest_first(paginate, since, page_size)[::-1]
            break
        if since is not None and finished < since:
            break
        found.append((item["uuid"], finished))
    return found


def _inspected_oldest_first(
    paginate: Paginate, since: datetime | None, page_size: int
) -> list[tuple[str, datetime]]:
    """Every inspected node at or after `since`, oldest first: a whole listing of the
    inspected nodes (NULLs last in an ascending sort on PostgreSQL)."""
    found = []
    for item in _nodes_by(paginate, "asc", page_size):
        finished = timestamp(item.get(_INSPECTED))
        if finished is None:
            break
        if since is None or finished >= since:
            found.append((item["uuid"], finished))
    return found


def _sorted(
    paginate: Paginate, kind: str, fields: str, key: str, *, direction: str, page_size: int
) -> Iterator[dict]:
    """Ironic's `kind` (nodes, ports) with `fields` and `key`, sorted by `key`."""
    params = {"fields": f"{fields},{key}", "sort_key": key, "sort_dir": direction}
    return paginate(kind, f"/{kind}", params, page_size)


def _nodes_by(paginate: Paginate, direction: str, page_size: int) -> Iterator[dict]:
    return _sorted(paginate, "nodes", "uuid", _INSPECTED, direction=direction, page_size=page_size)


def _ports_by(paginate: Paginate, key: str, direction: str, page_size: int) -> Iterator[dict]:
    fields = "uuid,node_uuid,address"
    return _sorted(paginate, "ports", fields, key, direction=direction, page_size=page_size)


def _first_stamp(items: Iterator[dict], key: str) -> datetime | None:
    """The `key` stamp of the first of `items` (a listing of one), None without any."""
    for item in items:
        return timestamp(item.get(key))
    return None
