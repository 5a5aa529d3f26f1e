"""The design's rolling upgrade, run by `scripts/cluster upgrade`, with introspections in
flight: none is lost.

The cluster starts on the checkout as it is (release r1). The new release (r2) is the
same checkout with two more migrations, one expand (a new table) and one contract
(drops a column of it that "older code used"), and its own version. 20 introspections
are started through HAProxy; half of the nodes post their payload before the upgrade,
the other half one by one while it runs (through HAProxy, which the upgrade takes each
API out of in turn), and the status of every node is read all along. Afterwards every
node is `finished`, no request through the proxy failed, every process runs r2, and
the schema is at r2's contract revision.
"""

import contextlib
import pathlib
import subprocess
import time

import pytest
import sqlalchemy
from sqlalchemy.pool import NullPool

from inspector.store import schema
from tests.e2e.conftest import (
    POLL,
    Client,
    Driver,
    enrolled,
    load_cluster_module,
    payloads,
    running_cluster,
)
from tests.integration.cluster import ROOT, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.alone]

NODES = 20
#: Seconds the upgrade may take (two releases' worth of process starts on two CPUs).
UPGRADE_TIMEOUT = 240.0
#: Seconds between two payloads posted during the upgrade.
POST_INTERVAL = 2.0
VERSION = "0.1.0+e2e.upgrade"
#: The order of the procedure: the APIs, then the worker hosts.
PROCESSES = ("api-1", "api-2", "api-3", "worker-1", "worker-2", "worker-3")
EXPAND, CONTRACT = "e2e0expand01", "e2e0contract1"

MIGRATION = '''"""{doc}

Revision ID: {revision}
Revises: {down}
"""

import sqlalchemy as sa
from alembic import op

revision = "{revision}"
down_revision = "{down}"
branch_labels = None
depends_on = None
phase = "{phase}"


def upgrade() -> None:
{body}
'''
EXPAND_BODY = """    op.create_table(
        "upgrade_probe",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("old_note", sa.String(64), nullable=True),
        sa.Column("note", sa.String(64), nullable=True),
    )"""
CONTRACT_BODY = """    op.drop_column("upgrade_probe", "old_note")"""


def new_release_source(directory):
    """The checkout, plus an expand and a contract revision and a new version."""
    load_cluster_module().copy_source(None, None, directory)
    versions = directory / "inspector" / "store" / "migrations" / "versions"
    for revision, down, phase, body in (
        (EXPAND, schema.head_revision(), "expand", EXPAND_BODY),
        (CONTRACT, EXPAND, "contract", CONTRACT_BODY),
    ):
        text = MIGRATION.format(
            doc=f"e2e rolling upgrade: the {phase} half",
            revision=revision,
            down=down,
            phase=phase,
            body=body,
        )
        (versions / f"{revision}_{phase}.py").write_text(text)
    init = directory / "inspector" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "0.1.0"', f'__version__ = "{VERSION}"'))
    assert VERSION in init.read_text()
    return directory


def columns(database_url: str, table: str) -> set[str]:
    engine = sqlalchemy.create_engine(database_url, poolclass=NullPool)
    try:
        return {c["name"] for c in sqlalchemy.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def test_rolling_upgrade_with_introspections_in_flight(tmp_path, services, ironic_api):
    with (
        enrolled(ironic_api, NODES) as enrolling,
        running_cluster(tmp_path / "cluster") as cluster,
    ):
        source = new_release_source(tmp_path / "new")
        nodes = enrolling.result()
        data = payloads(ironic_api, nodes)
        client = Client(cluster.url)
        driver = Driver(client, data)
        deadline = time.monotonic() + UPGRADE_TIMEOUT + 120
        try:
            driver.start_all(nodes, deadline)
            states = wait_for(
                lambda: (
                    (s := client.states(deadline))
                    and sum(status["state"] == "waiting" for status in s.values()) == NODES
                    and s
                ),
                60,
                POLL,
                message=lambda: f"every node waiting: {driver.summary()}",
            )
            driver.post_waiting(states, deadline, limit=NODES // 2)
            assert len(driver.posted) == NODES // 2

            command = [str(ROOT / "scripts" / "cluster"), "--dir", str(cluster.dir)]
            command += ["upgrade", "--source", str(source)]
            upgrade_log = tmp_path / "upgrade.log"
            with open(upgrade_log, "w") as sink:
                upgrade = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
                # While it runs: one more payload every POST_INTERVAL, every status read.
                while upgrade.poll() is None:
                    if time.monotonic() > deadline:
                        upgrade.kill()
                        upgrade.wait()
                        raise AssertionError(f"the upgrade did not end:\n{upgrade_log.read_text()}")
                    driver.post_waiting(client.states(deadline), deadline, limit=1)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        upgrade.wait(POST_INTERVAL)
            log = upgrade_log.read_text()
            print(log)
            assert upgrade.returncode == 0, log
            final = driver.run(deadline)
        finally:
            driver.close()

        assert {final[node]["state"] for node in nodes} == {"finished"}, {
            node: (final[node]["state"], final[node]["error"]) for node in nodes
        }
        assert client.failures == [], client.failures
        # The procedure, in its order, with each migration phase where it belongs.
        steps = [log.index(f"] {name}: ") for name in PROCESSES]
        assert steps == sorted(steps), log
        expand, contract = (
            log.index(f"] inspector db upgrade --{p}") for p in ("expand", "contract")
        )
        assert expand < steps[0] < steps[-1] < contract, log
        assert f"{EXPAND} (expand)" in log and f"{CONTRACT} (contract)" in log, log

        state = cluster.load()
        assert state["release"] == "r2"
        for name, process in state["processes"].items():
            if name != "haproxy":
                assert process["release"] == "r2", (name, process)
                cmdline = pathlib.Path(f"/proc/{process['pid']}/cmdline").read_text()
                assert "/releases/r2/" in cmdline, (name, cmdline)
        version = cluster.inspector("--version", release="r2")
        assert VERSION in version.stdout + version.stderr
        current = cluster.inspector("db", "version")
        assert current.stdout.startswith(CONTRACT), current.stdout
        assert columns(cluster.database_url(), "upgrade_probe") == {"id", "note"}
