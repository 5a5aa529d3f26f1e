"""`inspector db import-ironic-inspector` against the real ironic-inspector 12.5.0.

Its own `ironic-inspector-dbsync` builds its schema on the test PostgreSQL; its own API
(standalone, noauth, against the test Ironic) fills it: rules through POST /v1/rules,
introspections of fake-hardware nodes completed with real ramdisk payloads, one ended by
a ramdisk error, one aborted, one left waiting. Then our import (a dry run first) copies
it, and what both services hold is compared. scripts/ironic-inspector installs it.
"""

import contextlib
import datetime
import os
import pathlib
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from sqlalchemy import create_engine, exc, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool

from bench.fleet import peer
from inspector import cmd
from inspector.migration.ironic_inspector_db import FINAL_REVISION, NODES, Source
from inspector.store import Store, schema
from tests import seed
from tests.conftest import IronicAPI, drop_database, service_unavailable
from tests.integration.cluster import (
    free_port,
    ipa_payload,
    render_config,
    wait_for,
)

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "ironic-inspector"
INSPECTOR = [sys.executable, "-m", "inspector.cmd"]
#: The newest microversion ironic-inspector 12.5.0 speaks (1.17: unprocessed data).
API_VERSION = "1.18"
#: Seconds ironic-inspector gets to answer after it was started, and to leave.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
#: Our tables, each with the columns that order its rows: the import must not touch any
#: row of them when it has nothing to do.
TABLES = {
    "nodes": "uuid",
    "attributes": "node_uuid, name, value",
    "introspection_data": "node_uuid, processed",
    "rules": "uuid",
    "rule_conditions": "rule_uuid, position",
    "rule_actions": "rule_uuid, position",
}

#: Scoped to racks that no test node is in: stored and listed, never applied.
RULES = [
    {
        "description": "big machines",
        "scope": "rack-1",
        "conditions": [
            {"op": "ge", "field": "memory_mb", "value": 1024},
            {
                "op": "eq",
                "field": "data://inventory.cpu.architecture",
                "value": "x86_64",
                "multiple": "all",
            },
        ],
        "actions": [
            {"action": "set-capability", "name": "imported", "value": "yes"},
            {"action": "add-trait", "name": "CUSTOM_BIG"},
            {"action": "set-attribute", "path": "/extra/bmc", "value": "{data[ipmi_address]}"},
        ],
    },
    {
        "description": None,
        "scope": "rack-2",
        "conditions": [
            {"op": "in-net", "field": "data://inventory.bmc_address", "value": "192.0.2.0/24"},
            {"op": "matches", "field": "node://driver", "value": "fake-.*", "invert": True},
        ],
        "actions": [
            {"action": "extend-attribute", "path": "/extra/tags", "value": "x", "unique": True},
            {"action": "fail", "message": "not in this rack"},
        ],
    },
]
#: Accepted by ironic-inspector (it ignores parameters set to null), refused by our
#: validation (an action takes only its own parameters): reported, not imported.
INVALID_RULE = {
    "description": "null parameter",
    "scope": "rack-3",
    "actions": [{"action": "add-trait", "name": "CUSTOM_X", "note": None}],
}


class IronicInspector:
    """The running service and its database, over plain REST and SQL."""

    def __init__(self, url: str, database: Engine, database_url: str) -> None:
        self.url = url
        self.database = database
        self.database_url = database_url
        self.session = requests.Session()
        self.session.headers["X-OpenStack-Ironic-Inspector-API-Version"] = API_VERSION

    def call(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        response = self.session.request(method, f"{self.url}{path}", json=body, timeout=30)
        assert response.status_code == expect, f"{method} {path}: {response.text}"
        return response.json() if response.content else None

    def status(self, node_uuid: str) -> dict:
        return self.call("GET", f"/v1/introspection/{node_uuid}")

    def wait_state(self, node_uuid: str, state: str) -> dict:
        """The status once in `state`; for `error`, once the message is there too:
        ironic-inspector commits the state, then the message."""

        def reached() -> dict | None:
            status = self.status(node_uuid)
            done = status["state"] == state and (state != "error" or status["error"])
            return status if done else None

        return wait_for(
            reached,
            timeout=60,
            message=lambda: f"node {node_uuid} never {state}: {self.status(node_uuid)}",
        )

    def data(self, node_uuid: str, *, processed: bool) -> dict | None:
        path = f"/v1/introspection/{node_uuid}/data" + ("" if processed else "/unprocessed")
        response = self.session.get(f"{self.url}{path}", timeout=30)
        if response.status_code == 404:
            return None
        assert response.ok, response.text
        return response.json()

    def attributes(self, node_uuid: str) -> dict[str, list[str]]:
        with self.database.connect() as connection:
            rows = connection.execute(
                text("SELECT name, value FROM attributes WHERE node_uuid = :uuid"),
                {"uuid": node_uuid},
            )
            result: dict[str, set[str]] = {}
            for name, value in rows:
                result.setdefault(name, set()).add(value.lower())
        return {name: sorted(values) for name, values in sorted(result.items())}


def _installed() -> None:
    if not os.access(SCRIPT, os.X_OK):
        service_unavailable(f"{SCRIPT} is missing")
    if subprocess.run([SCRIPT, "installed"], check=False).returncode != 0:
        service_unavailable(
            "ironic-inspector 12.5.0 is not installed: scripts/ironic-inspector install"
        )


@contextlib.contextmanager
def _database(admin: Engine) -> Iterator[str]:
    """A new database for ironic-inspector, with the psycopg2 URL it is configured with."""
    name = f"ironic_inspector_{uuid.uuid4().hex[:12]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin.url.set(drivername="postgresql+psycopg2", database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        drop_database(admin, name)


@contextlib.contextmanager
def _running(config: pathlib.Path, log: pathlib.Path, url: str) -> Iterator[None]:
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [SCRIPT, "run", "--config-file", str(config)],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def answers() -> bool:
            assert process.poll() is None, f"ironic-inspector exited:\n{log.read_text()[-3000:]}"
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"{url}/", timeout=2).ok
            return False

        wait_for(answers, timeout=START_TIMEOUT, interval=0.2, message="ironic-inspector answers")
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=STOP_TIMEOUT)


@pytest.fixture
def ironic_inspector(
    postgresql_admin: Engine, ironic_url: str, tmp_path: pathlib.Path
) -> Iterator[IronicInspector]:
    """ironic-inspector 12.5.0 on its own database and port, as an operator ran it."""
    _installed()
    port = free_port()
    with _database(postgresql_admin) as database_url:
        config = tmp_path / "ironic-inspector.conf"
        sections = peer.configuration(
            port=port,
            database_url=database_url,
            ironic_url=ironic_url,
            log=tmp_path / "ironic-inspector.log",
            max_concurrency=100,
            timeout=3600,
        )
        config.write_text(render_config(sections))
        subprocess.run(
            [SCRIPT, "dbsync", "--config-file", str(config), "upgrade"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        engine = create_engine(
            make_url(database_url).set(drivername="postgresql+psycopg"), poolclass=NullPool
        )
        url = f"http://127.0.0.1:{port}"
        try:
            with _running(config, tmp_path / "ironic-inspector.out", url):
                yield IronicInspector(url, engine, database_url)
        finally:
            engine.dispose()


@pytest.fixture
def ours(postgresql_url: str, tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, Store]]:
    """Our configuration file (an upgraded, empty database) and a store on it."""
    config = tmp_path / "inspector.conf"
    config.write_text(render_config({"database": {"connection": postgresql_url}}))
    schema.upgrade(postgresql_url)
    store = Store.from_url(postgresql_url)
    yield config, store
    store.close()


def _inspector(*args: str, expect: int = 0) -> str:
    result = subprocess.run(
        INSPECTOR + list(args), cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == expect, f"{args}: {result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout + result.stderr


def _import_args(config: pathlib.Path, source: str, *extra: str) -> list[str]:
    return [
        "db",
        "import-ironic-inspector",
        "--config-file",
        str(config),
        "--source-connection",
        source,
        *extra,
    ]


def _run_import(capsys, config: pathlib.Path, source: str) -> list[str]:
    """An import in this process (the command starts in seconds: it is run as a process
    where its output and exit status as a user sees them matter)."""
    capsys.readouterr()
    assert cmd.main(_import_args(config, source)) == 0
    return capsys.readouterr().out.splitlines()


def _snapshot(store: Store) -> dict[str, list[tuple]]:
    with store.engine.connect() as connection:
        return {
            table: [
                tuple(row)
                for row in connection.execute(text(f"SELECT * FROM {table} ORDER BY {order}"))
            ]
            for table, order in TABLES.items()
        }


def _when(value: str | None) -> datetime.datetime | None:
    return None if value is None else datetime.datetime.fromisoformat(value)


def _assert_same(ii: IronicInspector, store: Store, node_uuids: list[str]) -> None:
    """Statuses, lookup attributes and both data documents, node by node."""
    for node_uuid in node_uuids:
        theirs, node = ii.status(node_uuid), store.get_node(node_uuid)
        assert (node.state, node.error) == (theirs["state"], theirs["error"]), node_uuid
        assert node.started_at == _when(theirs["started_at"])
        assert node.finished_at == _when(theirs["finished_at"])
        assert store.attributes(node_uuid) == ii.attributes(node_uuid)
        for processed in (True, False):
            assert store.get_data(node_uuid, processed=processed) == ii.data(
                node_uuid, processed=processed
            ), (node_uuid, processed)


def _assert_same_rules(ii: IronicInspector, store: Store, imported: list[str]) -> None:
    listed = [rule["uuid"] for rule in ii.call("GET", "/v1/rules")["rules"]]
    assert [rule["uuid"] for rule in store.rule_summaries()] == [u for u in listed if u in imported]
    for rule_uuid in imported:
        theirs = ii.call("GET", f"/v1/rules/{rule_uuid}")
        theirs.pop("links")
        assert store.get_rule(rule_uuid) == theirs


def _introspect(ii: IronicInspector, node: dict) -> None:
    ii.call("POST", f"/v1/introspection/{node['uuid']}", expect=202)
    ii.wait_state(node["uuid"], "waiting")


def _continue(ii: IronicInspector, ironic_api: IronicAPI, node: dict, expect: int = 200) -> None:
    macs = [port["address"] for port in ironic_api.node_ports(node["uuid"])]
    ii.call("POST", "/v1/continue", ipa_payload(macs), expect=expect)


def test_import_from_real_ironic_inspector(ironic_inspector, ironic_api, ours, capsys):
    ii, (config, store) = ironic_inspector, ours
    rule_uuids = [ii.call("POST", "/v1/rules", rule, expect=201)["uuid"] for rule in RULES]
    invalid = ii.call("POST", "/v1/rules", INVALID_RULE, expect=201)["uuid"]
    finished, failed, aborted, waiting = (
        ironic_api.enroll(),
        ironic_api.enroll(properties={"root_device": {"name": "/dev/nonexistent"}}),
        ironic_api.enroll(),
        ironic_api.enroll(macs=2, driver_info={"ipmi_address": "192.0.2.77"}),
    )
    for node in (finished, failed, aborted, waiting):
        _introspect(ii, node)
    _continue(ii, ironic_api, finished)
    ii.wait_state(finished["uuid"], "finished")
    # Processing fails (no disk matches the root device hints): ironic-inspector records
    # the error. (A ramdisk-reported error would leave the node waiting: its known bug.)
    _continue(ii, ironic_api, failed, expect=400)
    assert "root device" in ii.wait_state(failed["uuid"], "error")["error"]
    ii.call("POST", f"/v1/introspection/{aborted['uuid']}/abort", expect=202)
    assert ii.wait_state(aborted["uuid"], "error")["error"] == "Canceled by operator"
    assert ii.attributes(waiting["uuid"]) == {
        "bmc_address": ["192.0.2.77"],
        "mac": sorted(p["address"] for p in ironic_api.node_ports(waiting["uuid"])),
    }
    nodes = [n["uuid"] for n in (finished, failed, aborted, waiting)]
    source = ii.database_url

    empty = _snapshot(store)
    lines = _inspector(*_import_args(config, source, "--dry-run")).splitlines()
    assert _snapshot(store) == empty
    for node_uuid in nodes:
        assert f"node {node_uuid}: would create" in "\n".join(lines)
    assert f"rule {invalid}: would be rejected" in "\n".join(lines)
    assert "dry run: nothing was written" in lines

    lines = _run_import(capsys, config, source)
    text_ = "\n".join(lines)
    assert (
        f"rule {invalid}: rejected: Invalid parameters for action add-trait: "
        "unexpected parameter(s): note"
    ) in text_
    assert "node: 4 created" in lines
    _assert_same(ii, store, nodes)
    _assert_same_rules(ii, store, rule_uuids)
    for processed in (True, False):  # not only None == None
        assert store.get_data(finished["uuid"], processed=processed)["inventory"]["interfaces"]
    assert store.attributes(waiting["uuid"])["bmc_address"] == ["192.0.2.77"]

    imported = _snapshot(store)
    lines = _run_import(capsys, config, source)
    assert _snapshot(store) == imported, "a second run changed our database"
    assert "node: 4 unchanged" in lines
    assert not [line for line in lines if " created" in line or " updated" in line]

    # ironic-inspector moves on (it was still running): the next import follows it.
    _continue(ii, ironic_api, waiting)
    ii.wait_state(waiting["uuid"], "finished")
    lines = _run_import(capsys, config, source)
    assert any(line.startswith(f"node {waiting['uuid']}: updated: waiting") for line in lines)
    _assert_same(ii, store, nodes)

    # Our own record of a node moves on: the import leaves it alone and says so.
    node = store.get_node(finished["uuid"])
    seed.move(
        store,
        node.uuid,
        "starting",
        started_at=node.finished_at + datetime.timedelta(seconds=1),
        finished_at=None,
        error=None,
    )
    before = _snapshot(store)
    lines = _run_import(capsys, config, source)
    assert any(line.startswith(f"node {node.uuid}: left alone: ") for line in lines)
    assert _snapshot(store) == before


def test_refuses_what_is_not_an_ironic_inspector_database(ours, postgresql_admin):
    config, store = ours
    own = store.engine.url.render_as_string(hide_password=False)
    output = _inspector(*_import_args(config, own), expect=1)
    assert "is not an ironic-inspector database" in output
    assert "***" in output and "inspector:inspector@" not in output
    unreachable = postgresql_admin.url.set(port=free_port(), database="nowhere")
    source = unreachable.render_as_string(hide_password=False)
    output = _inspector(*_import_args(config, source), expect=1)
    assert "cannot read the ironic-inspector database" in output


@pytest.fixture
def source_url(server_url: str) -> str:
    """An ironic-inspector database of the final schema (its tables as the importer reads
    them), empty, on each server in turn."""
    engine = create_engine(server_url, poolclass=NullPool)
    try:
        NODES.metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(
                text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
            )
            connection.execute(
                text("INSERT INTO alembic_version VALUES (:revision)"),
                {"revision": FINAL_REVISION},
            )
    finally:
        engine.dispose()
    return server_url


def test_the_source_is_read_only_on_a_server(source_url):
    """Every session of the source refuses to write, in a transaction or in autocommit."""
    with Source(source_url) as source:
        assert source.nodes() == []
        engine = source._engine
        for each in (engine, engine.execution_options(isolation_level="AUTOCOMMIT")):
            for statement in (
                "DELETE FROM alembic_version",
                "CREATE TABLE written (x INTEGER)",
            ):
                with each.connect() as connection, pytest.raises(exc.DBAPIError) as caught:
                    connection.exec_driver_sql(statement)
                # PostgreSQL: "read-only transaction"; MariaDB: "READ ONLY transaction".
                assert re.search(r"read.only transaction", str(caught.value.orig), re.I)
    engine = create_engine(source_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            revision = connection.execute(text("SELECT version_num FROM alembic_version"))
            assert list(revision) == [(FINAL_REVISION,)]
    finally:
        engine.dispose()
