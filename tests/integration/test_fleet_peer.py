"""bench/fleet/peer.py: ironic-inspector 12.5.0 as the benchmark runs it, for real.

A fake-hardware node with one port in the test Ironic, introspected by the peer from
start to finished with a real ironic-python-agent payload posted to its /v1/continue;
then the peer is stopped and its database dropped. scripts/ironic-inspector installs it.
Beside it, our API answers the same refusals in the same words.
"""

import os
import pathlib
import subprocess
import time

import pytest
import requests
from sqlalchemy import text
from sqlalchemy.engine import Engine
from werkzeug.test import Client

from bench.fleet import peer
from inspector.api.wsgi import LazyApplication
from inspector.store import Store
from tests.conftest import IronicAPI, service_unavailable
from tests.integration.cluster import ipa_payload, wait_for

pytestmark = pytest.mark.integration

#: The microversion of ironic-inspector's API the test speaks (12.5.0 knows up to 1.18).
API_VERSION = "1.18"


@pytest.fixture
def installed() -> None:
    if not os.access(peer.SCRIPT, os.X_OK):
        service_unavailable(f"{peer.SCRIPT} is missing")
    if subprocess.run([peer.SCRIPT, "installed"], check=False).returncode != 0:
        service_unavailable(
            "ironic-inspector 12.5.0 is not installed: scripts/ironic-inspector install"
        )


def _databases(admin: Engine) -> set[str]:
    with admin.connect() as connection:
        rows = connection.execute(text("SELECT datname FROM pg_database"))
        return {name for (name,) in rows if name.startswith("fleet_peer_")}


def our_api(tmp_path: pathlib.Path, database_url: str, queue_url: str, ironic_url: str):
    """Our API as `inspector api` builds it (inspector.api.wsgi), on its own database,
    the work queue and the test Ironic."""
    path = tmp_path / "inspector.conf"
    path.write_text(
        "[DEFAULT]\nauth_strategy = noauth\n"
        f"[database]\nconnection = {database_url}\n"
        f"[queue]\ntransport_url = {queue_url}\n"
        f"[ironic]\nauth_type = none\nendpoint_override = {ironic_url}\n"
        "[processing]\nstore_data = database\n"
    )
    return LazyApplication({"INSPECTOR_CONFIG_FILES": str(path)})


def test_peer_introspects_a_node_with_a_real_ramdisk_payload(
    installed: None,
    postgresql_admin: Engine,
    postgresql_url: str,
    postgresql_store: Store,
    redis_url: str,
    ironic_url: str,
    ironic_api: IronicAPI,
    tmp_path: pathlib.Path,
) -> None:
    node = ironic_api.enroll(macs=1)
    (port,) = ironic_api.node_ports(node["uuid"])
    payload = ipa_payload([port["address"]])
    # As a PXE-booted ramdisk reports it (BOOTIF): without it the peer would mark the
    # port pxe_enabled=false, an extra Ironic call a real fleet does not see.
    payload["boot_interface"] = port["address"]
    for key in ("bmc_address", "bmc_v6address"):
        payload["inventory"].pop(key, None)
    admin_url = postgresql_admin.url.render_as_string(hide_password=False)
    before = _databases(postgresql_admin)
    session = requests.Session()
    session.headers["X-OpenStack-Ironic-Inspector-API-Version"] = API_VERSION

    with peer.running(
        tmp_path / "peer", ironic_url=ironic_url, admin_database_url=admin_url, timeout=120
    ) as running:
        assert running.alive()
        assert running.process.pid in running.pids()
        assert len(_databases(postgresql_admin) - before) == 1
        # Before its introspection, the node has no status and no data: both APIs refuse
        # alike, word for word (scripts match on the messages).
        ours = Client(our_api(tmp_path, postgresql_url, redis_url, ironic_url))
        uuid = node["uuid"]
        for path, message in (
            ("", f"Could not find node {uuid} in cache"),
            ("/data", f"Introspection data not found for node {uuid}, processed=True"),
            ("/data/unprocessed", f"Introspection data not found for node {uuid}, processed=False"),
        ):
            theirs = session.get(f"{running.url}/v1/introspection/{uuid}{path}", timeout=30)
            mine = ours.get(f"/v1/introspection/{uuid}{path}", headers=dict(session.headers))
            assert (theirs.status_code, theirs.json()) == (404, {"error": {"message": message}})
            assert (mine.status_code, mine.json) == (404, {"error": {"message": message}})
        started = time.monotonic()
        response = session.post(f"{running.url}/v1/introspection/{node['uuid']}", timeout=30)
        assert response.status_code == 202, response.text

        def waiting() -> dict | None:
            status = session.get(f"{running.url}/v1/introspection/{node['uuid']}", timeout=30)
            assert status.ok, status.text
            return status.json() if status.json()["state"] == "waiting" else None

        wait_for(waiting, timeout=60, interval=0.2, message="the peer powers the node on")
        response = session.post(f"{running.url}/v1/continue", json=payload, timeout=60)
        assert response.ok, response.text
        assert response.json()["uuid"] == node["uuid"]

        def finished() -> dict | None:
            status = session.get(f"{running.url}/v1/introspection/{node['uuid']}", timeout=30)
            assert status.ok, status.text
            return status.json() if status.json()["finished"] else None

        status = wait_for(finished, timeout=60, interval=0.2, message="introspection ends")
        assert status["error"] is None, status
        assert status["state"] == "finished"
        assert time.monotonic() - started < 60
        stored = session.get(f"{running.url}/v1/introspection/{node['uuid']}/data", timeout=30)
        assert stored.ok, stored.text
        assert stored.json()["macs"] == [port["address"]]
        process = running.process

    assert process.poll() is not None
    assert not running.alive() and running.pids() == []
    assert _databases(postgresql_admin) == before
    # (Its log also holds an ERROR "The requested node was not found" on every start of
    # an introspection: 12.5.0 looks the node up in its cache before adding it.)
    assert "Introspection finished successfully" in running.log.read_text()
    # The peer powers the node off once the data is processed ([processing] power_off).
    ironic_api.wait_for(node["uuid"], lambda n: n["power_state"] == "power off")
