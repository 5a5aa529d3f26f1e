"""`inspector status --json` and GET /metrics against a known cluster state: two workers,
one introspection waiting for its ramdisk."""

import json

import pytest
import requests

from tests.integration.cluster import running_deployment, start, wait_for

pytestmark = pytest.mark.integration


def test_status_and_metrics_tell_the_cluster_as_it_is(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        workers=2,
        options={"DEFAULT": {"clean_up_period": 1}},
    ) as cluster:
        node = ironic_api.enroll()["uuid"]
        start(cluster, node)
        pids = {str(worker.pid) for worker in cluster.workers}

        def report():
            answer = cluster.run("status", "--json", "--wait", "2")
            reports = {r["name"]: r for r in json.loads(answer.stdout)}
            groups = reports["singletons"]["data"]["groups"]
            members = groups["periodic"]["members"] or []
            ready = {m.rsplit("-", 1)[1] for m in members} == pids and groups["periodic"]["leader"]
            return ready and (answer, reports)

        answer, reports = wait_for(report, 30, 0.5, "both workers in the periodic group")
        assert answer.returncode == 0, answer.stdout
        for item in reports.values():
            assert item["version"] == "B" and item["format_version"] == 1
        assert reports["database"]["data"]["status"]["code"] == 0
        assert reports["queue"]["data"]["depth"] == 0
        assert reports["nodes"]["kind"] == 0
        assert reports["nodes"]["data"]["by_state"]["waiting"] == 1
        assert reports["nodes"]["data"]["active"] == 1
        leader = reports["singletons"]["data"]["groups"]["periodic"]["leader"]["holder"]
        assert leader.rsplit("-", 1)[1] in pids
        assert reports["periodic"]["data"]["status"]["code"] == 0
        assert len(reports["firewall"]["data"]["hosts"]) == 2

        text = requests.get(f"{cluster.url}/metrics", timeout=10).text
        assert 'inspector_nodes{state="waiting"} 1.0' in text
        assert f'inspector_leader_term{{holder="{leader}",singleton="periodic"}}' in text
        assert 'inspector_backend_up{backend="queue"} 1.0' in text
