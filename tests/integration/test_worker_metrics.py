"""A worker process's GET /metrics on real services: one `inspector api`, one
`inspector worker` with [metrics] worker_listen_port set, a node in the real Ironic."""

import pytest
import requests

from tests.integration.cluster import free_port, running_deployment, start, wait_for

pytestmark = pytest.mark.integration


def scrape(port: int) -> str:
    return requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text


def test_the_worker_serves_its_transitions_and_leaderships(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    port = free_port()
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        workers=1,
        options={"metrics": {"worker_listen_port": port}},
    ) as deployment:
        node = ironic_api.enroll()["uuid"]
        start(deployment, node)

        def scraped(*lines):
            try:
                text = scrape(port)
            except requests.RequestException:
                return None
            return text if all(line in text for line in lines) else None

        text = wait_for(
            lambda: scraped(
                # The API applies `inspect`; the worker runs its task.
                'inspector_worker_transitions_total{event="inspect",outcome="resumed"} 1.0',
                'inspector_worker_transitions_total{event="wait",outcome="applied"} 1.0',
                'inspector_worker_leader{singleton="periodic"} 1.0',
            ),
            30.0,
            message=lambda: f"worker metrics\n{deployment.logs()}",
        )
        assert 'inspector_worker_task_duration_seconds_count{state="starting"} 1.0' in text
        # The noop PXE driver (the default) does not run for the firewall's leadership.
        assert 'inspector_worker_leader{singleton="firewall"} 0.0' in text
        assert "inspector_worker_firewall_open " in text
        # Where the time went: every backend the starting task used was timed.
        for backend in ("database", "DLM", "queue", "Ironic"):
            line = f'inspector_worker_backend_calls_total{{backend="{backend}"}} '
            assert line in text, backend
            calls = float(text.split(line, 1)[1].split()[0])
            assert calls >= 1, backend
        deployment.check_alive()
