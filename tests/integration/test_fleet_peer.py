"""bench/fleet/peer.py: ironic-inspector 12.5.0 as the benchmark runs it, for real.

A fake-hardware node with one port in the test Ironic, introspected by the peer from
start to finished with a real ironic-python-agent payload posted to its /v1/continue;
then the peer is stopped and its database dropped. scripts/ironic-inspector installs it.
"""

import os
import pathlib
import subprocess
import time

import pytest
import requests
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.fleet import peer
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


def test_peer_introspects_a_node_with_a_real_ramdisk_payload(
    installed: None,
    postgresql_admin: Engine,
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
