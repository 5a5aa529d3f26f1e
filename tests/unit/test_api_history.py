"""/v1/introspection/<node>/history and /drift through Flask's test client (SQLite store):
microversion gating, pagination, 404s naming what is unknown, 400 for a reversed range,
and an empty history without stored data."""

import copy
import datetime

import pytest

from tests import fixtures, seed

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}
NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
UNKNOWN = "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"


@pytest.fixture
def conf(conf):
    conf.set_override("store_data", "database", group="processing")
    return conf


def introspect(store, when: datetime.datetime, data: dict | None, *, fail: bool = False) -> int:
    """One ended introspection of NODE kept in its history; its id."""
    try:
        store.get_node(NODE)
    except Exception:
        seed.node(store, NODE, "starting", started_at=when)
    else:
        seed.move(store, NODE, "starting", started_at=when, finished_at=None, error=None)
    if data is not None:
        store.store_data(NODE, data, processed=False)
        store.store_data(NODE, dict(data, processed=True), processed=True)
    end = {"finished_at": when}
    ended = seed.move(store, NODE, "error", error="boom", **end) if fail else None
    ended = ended or seed.move(store, NODE, "finished", **end)
    store.keep_introspection(ended)
    return store.history_page(NODE, limit=1)[0].id


def three(store) -> list[int]:
    """Three introspections: the large server, the same with a new BIOS, then a failure."""
    first = fixtures.load(fixtures.LARGE_SERVER)
    second = copy.deepcopy(first)
    second["inventory"]["system_vendor"]["firmware"]["version"] = "9.9"
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    return [
        introspect(store, now - datetime.timedelta(seconds=3), first),
        introspect(store, now - datetime.timedelta(seconds=2), second),
        introspect(store, now - datetime.timedelta(seconds=1), first, fail=True),
    ]


@pytest.mark.parametrize("headers", [{}, {"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}])
@pytest.mark.parametrize(
    "path", ["history", "history/1/data", "history/1/data/unprocessed", "drift"]
)
def test_below_1_19_the_routes_do_not_exist(client, store, headers, path):
    three(store)
    response = client.get(f"/v1/introspection/{NODE}/{path}", headers=headers)
    assert response.status_code == 404
    assert "1.19" in response.json["error"]["message"]


def test_history_lists_newest_first_with_links_and_pages(client, store):
    ids = three(store)
    body = client.get(f"/v1/introspection/{NODE}/history", headers=V19).json
    assert [e["id"] for e in body["history"]] == ids[::-1]
    assert [e["state"] for e in body["history"]] == ["error", "finished", "finished"]
    assert body["history"][0]["error"] == "boom"
    assert body["history"][1]["links"][0] == {
        "rel": "data",
        "href": f"http://localhost/v1/introspection/{NODE}/history/{ids[1]}/data",
    }
    page = client.get(f"/v1/introspection/{NODE}/history?limit=1&marker={ids[2]}", headers=V19)
    assert [e["id"] for e in page.json["history"]] == [ids[1]]
    bad = client.get(f"/v1/introspection/{NODE}/history?marker=x", headers=V19)
    assert bad.status_code == 400


def test_the_data_of_a_past_introspection(client, store):
    ids = three(store)
    raw = client.get(f"/v1/introspection/{NODE}/history/{ids[1]}/data/unprocessed", headers=V19)
    assert raw.json["inventory"]["system_vendor"]["firmware"]["version"] == "9.9"
    processed = client.get(f"/v1/introspection/{NODE}/history/{ids[0]}/data", headers=V19)
    assert processed.json["processed"] is True
    # The current data endpoint answers as before: the latest stored data.
    assert client.get(f"/v1/introspection/{NODE}/data", headers=V19).json["processed"] is True


def test_drift_defaults_to_the_last_two_finished(client, store):
    ids = three(store)
    body = client.get(f"/v1/introspection/{NODE}/drift", headers=V19).json
    assert (body["from"], body["to"]) == (ids[0], ids[1])
    assert [(c["path"], c["old"], c["new"]) for c in body["changes"]] == [
        ("firmware.version", "1.2.3", "9.9")
    ]
    assert body["summary"]["firmware"] == 1
    back = client.get(f"/v1/introspection/{NODE}/drift?from={ids[1]}&to={ids[2]}", headers=V19)
    assert back.json["changes"][0]["new"] == "1.2.3"


def test_unknown_node_or_id_is_404_naming_it_and_a_reversed_range_400(client, store):
    ids = three(store)
    unknown = client.get(f"/v1/introspection/{UNKNOWN}/history", headers=V19)
    assert unknown.status_code == 404 and UNKNOWN in unknown.json["error"]["message"]
    for ident in ("999999", "abc", str(10**30)):
        missing = client.get(f"/v1/introspection/{NODE}/history/{ident}/data", headers=V19)
        assert missing.status_code == 404, ident
        assert ident in missing.json["error"]["message"]
    drift = client.get(f"/v1/introspection/{NODE}/drift?from=999999", headers=V19)
    assert drift.status_code == 404 and "999999" in drift.json["error"]["message"]
    reversed_ = client.get(f"/v1/introspection/{NODE}/drift?from={ids[1]}&to={ids[0]}", headers=V19)
    assert reversed_.status_code == 400
    assert "newer" in reversed_.json["error"]["message"]


def test_a_failed_introspection_without_data_has_no_drift_but_a_404(client, store):
    three(store)
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    failed = introspect(store, now, None, fail=True)
    response = client.get(f"/v1/introspection/{NODE}/drift?to={failed}", headers=V19)
    assert response.status_code == 404
    assert (
        f"Introspection {failed} of node {NODE} kept no data" in response.json["error"]["message"]
    )
    data = client.get(f"/v1/introspection/{NODE}/history/{failed}/data", headers=V19)
    assert data.status_code == 404 and "kept no processed data" in data.json["error"]["message"]


def test_without_stored_data_the_history_is_empty(client, store, conf):
    three(store)
    conf.set_override("store_data", "none", group="processing")
    assert client.get(f"/v1/introspection/{NODE}/history", headers=V19).json == {"history": []}
    drift = client.get(f"/v1/introspection/{NODE}/drift", headers=V19).json
    assert drift["changes"] == [] and drift["from"] is None


@pytest.mark.parametrize(
    ("headers", "shown"),
    [
        ({}, False),
        ({"X-OpenStack-Ironic-Inspector-API-Version": "1.18"}, False),
        ({"X-OpenStack-Ironic-Inspector-API-Version": "1.0"}, False),
        (V19, True),
        ({"X-OpenStack-Ironic-Inspector-API-Version": "latest"}, True),
    ],
)
def test_the_processed_data_shows_its_drift_from_1_19_only(client, store, headers, shown):
    """The drift is stored in the processed data (the rules read it there); at
    ironic-inspector's versions the data endpoint answers without it, as it did."""
    data = {"inventory": {"cpu": {"count": 2}}, "drift": {"base": 1, "changes": []}}
    seed.node(store, NODE, "finished")
    store.store_data(NODE, data, processed=True)
    store.store_data(NODE, {"inventory": {}}, processed=False)
    body = client.get(f"/v1/introspection/{NODE}/data", headers=headers).json
    assert ("drift" in body) is shown
    assert body["inventory"] == data["inventory"]
    raw = client.get(f"/v1/introspection/{NODE}/data/unprocessed", headers=headers).json
    assert raw == {"inventory": {}}
