"""GET /metrics: this process's requests and the cluster as the store and queue see it."""

import re

from inspector import errors
from inspector.machine import State
from tests import seed


def value(text: str, metric: str, **labels) -> float | None:
    """The value of one sample in Prometheus text, or None."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(metric):
            continue
        name, _, rest = line.partition("{") if "{" in line else (line.split(" ")[0], "", "")
        if name != metric:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(found.get(k) == str(v) for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_report_nodes_leaders_runs_and_requests(client, store):
    seed.node(store, "5c1e9a70-3b2d-4f6e-8a9b-0c1d2e3f4a5b", State.WAITING)
    seed.node(store, "6d2f0b81-4c3e-4a7f-9b0c-1d2e3f4a5b6c", State.FINISHED)
    term = store.claim_leadership("periodic", "host-1-42")
    run = store.start_run("periodic", "timeout", "host-1-42", term)
    store.finish_run(run, "0 timed out")
    assert client.get("/v1/introspection").status_code == 200
    answer = client.get("/metrics")
    assert answer.status_code == 200
    assert answer.mimetype == "text/plain"
    text = answer.get_data(as_text=True)
    assert value(text, "inspector_nodes", state="waiting") == 1
    assert value(text, "inspector_nodes", state="finished") == 1
    assert value(text, "inspector_nodes", state="error") == 0
    assert value(text, "inspector_leader_term", singleton="periodic", holder="host-1-42") == 1
    assert value(text, "inspector_periodic_last_run_duration_seconds", task="timeout") >= 0
    assert value(text, "inspector_notifications_pending") == 0
    assert value(text, "inspector_backend_up", backend="database") == 1
    assert (
        value(
            text,
            "inspector_api_requests_total",
            endpoint="introspection.list_statuses",
            method="GET",
            status="200",
        )
        == 1
    )


def test_a_database_outage_is_reported_not_raised(client, store, monkeypatch):
    def down():
        raise errors.ServiceUnavailable("the database is unavailable", service="database")

    monkeypatch.setattr(store, "census", down)
    answer = client.get("/metrics")
    assert answer.status_code == 200
    text = answer.get_data(as_text=True)
    assert value(text, "inspector_backend_up", backend="database") == 0
    assert value(text, "inspector_nodes", state="waiting") is None
