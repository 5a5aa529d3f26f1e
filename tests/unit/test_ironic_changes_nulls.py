"""inspector.ironic.changes against listings paged as Ironic pages them
(oslo.db's paginate_query: sorted by the key then the id, the next page after the
marker's values, a NULL marker value compared by its id alone), with the NULL order of
each database Ironic runs on: last in a descending sort on MySQL/MariaDB and SQLite,
first on PostgreSQL (and the reverse ascending). Every inspected node at or after
`since` is found, whatever the page size and the ids of the never-inspected nodes; the
ports changed since a moment are found where Ironic's database sorts NULL last, and
where it sorts it first the answer says they cannot be (the leader then lists all)."""

from datetime import datetime

import pytest

from inspector.ironic import changes
from inspector.ironic.model import timestamp

KEY = "inspection_finished_at"


def stamp(second: int) -> str:
    return f"2026-01-01T10:00:{second:02d}+00:00"


def listing(rows: list[dict], *, nulls_first_in_desc: bool, calls: list):
    """A Paginate over rows ({"id", "uuid", KEY}) as Ironic and oslo.db page them."""

    def ordered(key: str, desc: bool) -> list[dict]:
        inspected = sorted((r for r in rows if r[key]), key=lambda r: (r[key], r["id"]))
        never = sorted((r for r in rows if not r[key]), key=lambda r: r["id"])
        if desc:
            inspected.reverse()
            never.reverse()
        nulls_first = nulls_first_in_desc if desc else not nulls_first_in_desc
        return never + inspected if nulls_first else inspected + never

    def after(row: dict, marker: dict, key: str, desc: bool) -> bool:
        def beyond(a, b) -> bool:
            return a < b if desc else a > b

        if marker[key] is None:  # oslo.db skips the NULL value: the id alone
            return beyond(row["id"], marker["id"])
        if row[key] is None:  # NULL < x, NULL = x: neither holds in SQL
            return False
        return beyond(row[key], marker[key]) or (
            row[key] == marker[key] and beyond(row["id"], marker["id"])
        )

    def paginate(kind, path, params, page_size):
        calls.append(params["sort_dir"])
        key, desc = params["sort_key"], params["sort_dir"] == "desc"
        everything, marker = ordered(key, desc), None
        while True:
            rest = [r for r in everything if marker is None or after(r, marker, key, desc)]
            page = rest[:page_size]
            yield from ({k: v for k, v in r.items() if k != "id"} for r in page)
            if len(page) < page_size:
                return
            marker = page[-1]

    return paginate


def site(inspected: dict[int, int], nodes: int) -> list[dict]:
    """`nodes` nodes, ids 1..nodes; `inspected`: id -> the second its inspection ended."""
    return [
        {"id": i, "uuid": f"node-{i}", KEY: stamp(inspected[i]) if i in inspected else None}
        for i in range(1, nodes + 1)
    ]


#: Inspected nodes of high ids, the never-inspected below them: on PostgreSQL a page
#: ending on a never-inspected node makes the next page skip the inspected ones.
HIGH = {18: 5, 19: 7, 20: 6}
#: And of low ids, among many never-inspected above them.
LOW = {1: 3, 2: 9, 3: 8}


@pytest.mark.parametrize("nulls_first_in_desc", [False, True], ids=["mysql-sqlite", "postgresql"])
@pytest.mark.parametrize("inspected", [HIGH, LOW, {**HIGH, **LOW}], ids=["high", "low", "both"])
@pytest.mark.parametrize("page_size", [1, 2, 5, 1000])
@pytest.mark.parametrize("since", [None, 6])
def test_every_inspection_since_is_found_newest_first(
    nulls_first_in_desc, inspected, page_size, since
):
    calls: list[str] = []
    paginate = listing(site(inspected, 20), nulls_first_in_desc=nulls_first_in_desc, calls=calls)
    since_at = None if since is None else timestamp(stamp(since))
    found = changes.inspected_since(paginate, since_at, page_size)
    expected = sorted(
        (
            (f"node-{i}", timestamp(stamp(s)))
            for i, s in inspected.items()
            if since is None or s >= since
        ),
        key=lambda pair: pair[1],
        reverse=True,
    )
    assert found == expected
    if not nulls_first_in_desc:
        assert calls == ["desc"]  # one listing, read down to the first older or NULL


def test_nothing_inspected_is_two_short_reads():
    calls: list[str] = []
    paginate = listing(site({}, 20), nulls_first_in_desc=True, calls=calls)
    assert changes.inspected_since(paginate, None, 5) == []
    assert calls == ["desc", "asc"]


def test_all_inspected_reads_newest_first_only():
    calls: list[str] = []
    every = {i: i for i in range(1, 21)}
    paginate = listing(site(every, 20), nulls_first_in_desc=True, calls=calls)
    found = changes.inspected_since(paginate, timestamp(stamp(18)), 2)
    assert [uuid for uuid, _ in found] == ["node-20", "node-19", "node-18"]
    assert calls == ["desc"]
    assert all(isinstance(at, datetime) for _, at in found)


def ports(created: dict[int, int], updated: dict[int, int], count: int) -> list[dict]:
    """`count` ports, ids 1..count; created at second 0 unless `created` says, updated
    when `updated` says (else never: NULL)."""
    return [
        {
            "id": i,
            "uuid": f"port-{i}",
            "node_uuid": f"node-{i}",
            "address": f"52:54:00:00:00:{i:02x}",
            "created_at": stamp(created.get(i, 0)),
            "updated_at": stamp(updated[i]) if i in updated else None,
        }
        for i in range(1, count + 1)
    ]


@pytest.mark.parametrize("nulls_first_in_desc", [False, True], ids=["mysql-sqlite", "postgresql"])
@pytest.mark.parametrize("updated", [{}, {19: 9, 2: 8}], ids=["never-updated", "some-updated"])
@pytest.mark.parametrize("page_size", [1, 2, 50])
def test_the_ports_changed_since_are_found_or_said_out_of_reach(
    nulls_first_in_desc, updated, page_size
):
    created = {20: 7, 3: 6}
    calls: list[str] = []
    paginate = listing(
        ports(created, updated, 20), nulls_first_in_desc=nulls_first_in_desc, calls=calls
    )
    found = changes.changed_ports(paginate, timestamp(stamp(5)), page_size)
    if nulls_first_in_desc and updated:
        assert found is None  # the updates sort after every never-updated port
        return
    newest_first = [
        (f"port-{i}", timestamp(stamp(at)))
        for column in (created, updated)
        for i, at in sorted(column.items(), key=lambda item: item[1], reverse=True)
    ]
    assert found is not None
    assert [(port.uuid, at) for port, at in found] == newest_first
