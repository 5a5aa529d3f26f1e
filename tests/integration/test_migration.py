"""docs/migration.md, run: the real ironic-inspector 12.5.0 (scripts/ironic-inspector) on
its own configuration file, standalone (SQLite) and split (PostgreSQL, the real RabbitMQ
and memcached), leaves state behind; it is stopped, and the guide's commands run Inspector
on the SAME file, unchanged, with one file of Inspector's after it (its own database):

    inspector db upgrade
    inspector db import-ironic-inspector --source-connection <its connection>
    inspector all                          (standalone)
    inspector api + inspector worker       (split)

and the topology comes up: the imported introspections and rule are there through the
client (python-ironic-inspector-client), the node ironic-inspector left waiting finishes
when its ramdisk posts to Inspector, and (split) a new introspection finishes against the
real Ironic. The split processes take its memcached as ironic-inspector did, each
warning once what memcached cannot promise. The option list docs/configuration.md's
table comes from is checked against the installed ironic-inspector's own.
"""

import contextlib
import hashlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import urllib.parse
import uuid
from collections.abc import Iterator

import kombu
import pytest
import requests
from ironic_inspector_client import ClientV1
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from inspector.coordination import backends
from tests.conftest import IronicAPI, delete_queues
from tests.dlm_servers import dlm_url
from tests.integration.cluster import (
    POOL_STARTED,
    free_port,
    ipa_payload,
    render_config,
    scratch_database,
    wait_for,
)
from tests.integration.test_import_ironic_inspector import (
    SCRIPT,
    IronicInspector,
    _database,
    _installed,
)
from tests.unit.test_compat import UPSTREAM, upstream_options

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).parents[2]
INSPECTOR = [sys.executable, "-m", "inspector.cmd"]
#: Seconds a process gets to answer after it was started, and to leave after SIGTERM.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 20.0
#: What `inspector api` and `inspector worker` warn, once, on ironic-inspector's memcached.
CAVEAT = backends.caveat("memcached://")
#: The rule ironic-inspector holds (scoped to a rack no node is in: never applied).
RULE = {
    "description": "migrated",
    "scope": "rack-migration",
    "conditions": [{"op": "ge", "field": "memory_mb", "value": 1024}],
    "actions": [{"action": "set-capability", "name": "migrated", "value": "yes"}],
}
#: What ironic-inspector 12.5.0's tools/config-generator.conf lists.
NAMESPACES = (
    "ironic_inspector",
    "keystonemiddleware.auth_token",
    "oslo.db",
    "oslo.log",
    "oslo.messaging",
    "oslo.middleware.cors",
    "oslo.middleware.healthcheck",
    "oslo.policy",
    "oslo.service.service",
    "oslo.service.sslutils",
    "oslo.service.wsgi",
)


class Processes:
    """Processes of a test, each with its log file; all stopped on exit (SIGTERM to its
    group, then SIGKILL)."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[tuple[subprocess.Popen, pathlib.Path]] = []

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = self.tmp_path / f"{name}.log"
        with open(log, "ab") as output:
            process = subprocess.Popen(
                argv,
                cwd=ROOT,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.started.append((process, log))
        return process

    def log(self, process: subprocess.Popen) -> str:
        path = next(log for each, log in self.started if each is process)
        return path.read_text(errors="replace")

    def answers(self, process: subprocess.Popen, url: str) -> None:
        """Until url answers GET / with 200; fails early when the process exits."""

        def up() -> bool:
            assert process.poll() is None, f"{process.args} exited:\n{self.log(process)[-4000:]}"
            with contextlib.suppress(requests.RequestException):
                return requests.get(f"{url}/", timeout=2).ok
            return False

        wait_for(up, START_TIMEOUT, 0.1, lambda: f"{url} answering\n{self.log(process)[-4000:]}")

    def stop(self, process: subprocess.Popen) -> int:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            return process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.wait(timeout=STOP_TIMEOUT)

    def stop_all(self) -> None:
        for process, _ in self.started:
            if process.poll() is None:
                self.stop(process)
        for process, log in self.started:
            tail = log.read_text(errors="replace").splitlines()[-40:]
            print(f"----- {' '.join(map(str, process.args))[:200]}", *tail, sep="\n")


@pytest.fixture
def processes(tmp_path) -> Iterator[Processes]:
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def inspector(*args: str, expect: int = 0) -> str:
    """`inspector ARGS` to completion, as the guide runs it; its output."""
    done = subprocess.run(
        [*INSPECTOR, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == expect, f"inspector {args}:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def files(*paths: pathlib.Path) -> list[str]:
    return [arg for path in paths for arg in ("--config-file", str(path))]


def rabbit_url(kombu_url: str) -> str:
    """The test broker's kombu URL (amqp://u:p@h:port//) as oslo.messaging writes it."""
    parts = urllib.parse.urlsplit(kombu_url)
    vhost = parts.path[1:]
    return f"rabbit://{parts.netloc}/{'' if vhost == '/' else vhost}"


def create_state(ii: IronicInspector, ironic_api: IronicAPI) -> tuple[str, dict, dict]:
    """With ironic-inspector: a rule, one node introspected to the end, one left waiting
    for its ramdisk. Returns (rule uuid, finished node, waiting node)."""
    rule = ii.call("POST", "/v1/rules", RULE, expect=201)["uuid"]
    finished, waiting = ironic_api.enroll(), ironic_api.enroll()
    for node in (finished, waiting):
        # The split API finds its conductor through the DLM: it may not be there yet.
        wait_for(
            lambda n=node: (
                requests.post(f"{ii.url}/v1/introspection/{n['uuid']}", timeout=10).status_code
                == 202
            ),
            START_TIMEOUT,
            0.2,
            "ironic-inspector starts an introspection",
        )
        ii.wait_state(node["uuid"], "waiting")
    ramdisk_posts(ii.url, ironic_api, finished)
    ii.wait_state(finished["uuid"], "finished")
    return rule, finished, waiting


def ramdisk_posts(url: str, ironic_api: IronicAPI, node: dict) -> None:
    macs = [port["address"] for port in ironic_api.node_ports(node["uuid"])]
    answer = requests.post(f"{url}/v1/continue", json=ipa_payload(macs), timeout=30)
    assert answer.status_code == 200, answer.text


def assert_imported(client: ClientV1, rule: str, finished: dict, waiting: dict) -> None:
    assert client.get_status(finished["uuid"])["state"] == "finished"
    assert client.get_status(waiting["uuid"])["state"] == "waiting"
    listed = {status["uuid"] for status in client.list_statuses()}
    assert {finished["uuid"], waiting["uuid"]} <= listed
    assert client.rules.get(rule)["description"] == RULE["description"]
    assert client.get_data(finished["uuid"])["inventory"]["interfaces"]


def wait_finished(client: ClientV1, node_uuid: str) -> dict:
    return wait_for(
        lambda: (status := client.get_status(node_uuid))["finished"] and status,
        START_TIMEOUT,
        0.1,
        lambda: f"node {node_uuid} finished: {client.get_status(node_uuid)}",
    )


# ---------------------------------------------------------------- standalone


def test_standalone_ironic_inspector_becomes_inspector_all(tmp_path, ironic_url, processes):
    _installed()
    port = free_port()
    source = tmp_path / "ironic-inspector.sqlite"
    # ironic-inspector's file, as a single-host (Bifrost-like) install has it.
    theirs = tmp_path / "ironic-inspector.conf"
    theirs.write_text(
        render_config(
            {
                "DEFAULT": {
                    "auth_strategy": "noauth",
                    "transport_url": "fake://",
                    "listen_address": "127.0.0.1",
                    "listen_port": port,
                    "introspection_delay": 0,
                    "max_concurrency": 100,
                },
                "database": {"connection": f"sqlite:///{source}"},
                "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
                "processing": {"store_data": "database"},
                "pxe_filter": {"driver": "noop"},
            }
        )
    )
    url = f"http://127.0.0.1:{port}"
    ironic_api = IronicAPI(ironic_url)
    try:
        subprocess.run(
            [SCRIPT, "dbsync", "--config-file", theirs, "upgrade"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        engine = create_engine(f"sqlite:///{source}", poolclass=NullPool)
        upstream = processes.start("ironic-inspector", [SCRIPT, "run", "--config-file", theirs])
        processes.answers(upstream, url)
        rule, finished, waiting = create_state(IronicInspector(url, engine, ""), ironic_api)
        # 1. Stop ironic-inspector.
        processes.stop(upstream)
        engine.dispose()
        # 2. Its file as it is, and Inspector's own database in a file of ours after it.
        ours = tmp_path / "inspector.conf"
        ours.write_text(
            render_config(
                {
                    "DEFAULT": {"state_path": tmp_path / "state"},
                    "database": {"connection": f"sqlite:///{tmp_path / 'inspector.sqlite'}"},
                }
            )
        )
        both = files(theirs, ours)
        # 3-5. Schema, dry run, import; the source is only read.
        before = hashlib.sha256(source.read_bytes()).hexdigest()
        inspector("db", "upgrade", *both)
        source_url = f"sqlite:///{source}"
        imports = ["db", "import-ironic-inspector", *both, "--source-connection", source_url]
        assert "dry run: nothing was written" in inspector(*imports, "--dry-run")
        output = inspector(*imports)
        assert "node: 2 created" in output and "rule: 1 created" in output
        assert hashlib.sha256(source.read_bytes()).hexdigest() == before
        # Its standalone mode is one process: `inspector all`, not api + worker.
        assert "valid for `inspector all`" in inspector("config", "check", "--role", "all", *both)
        refused = inspector("config", "check", "--role", "api", *both, expect=2)
        assert "[queue] transport_url = memory:// only works inside one process" in refused
        assert "[DEFAULT] transport_url = fake:// is not taken as the queue" in refused
        # 6. Start it on the same files.
        service = processes.start("inspector-all", [*INSPECTOR, "all", *both])
        processes.answers(service, url)
        log = processes.log(service)
        assert "[DEFAULT] max_concurrency (set in " in log
        assert "is ironic-inspector's and ignored" in log
        # Check with the client: the imported introspections and rule are there.
        client = ClientV1(inspector_url=url, api_version="1.18")
        assert_imported(client, rule, finished, waiting)
        # The node ironic-inspector left waiting: its ramdisk posts to Inspector now.
        ramdisk_posts(url, ironic_api, waiting)
        assert wait_finished(client, waiting["uuid"])["state"] == "finished"
        assert processes.stop(service) == 0
    finally:
        ironic_api.delete_nodes()


# ---------------------------------------------------------------- split


@pytest.fixture
def broker(rabbitmq_server: str) -> Iterator[tuple[str, str]]:
    """(kombu URL, a host name of this test); ironic-inspector's and our queues of that
    host are deleted afterwards."""
    host = f"migration-{uuid.uuid4().hex[:10]}"
    yield rabbitmq_server, host
    with kombu.Connection(rabbitmq_server, connect_timeout=5) as connection:
        channel = connection.channel()
        # ironic-inspector's RPC topic queues (its fan-out and reply queues delete
        # themselves); ours (named after the host here).
        for name in ("ironic_inspector.conductor", f"ironic_inspector.conductor.{host}"):
            channel.queue_delete(name)
    delete_queues(rabbitmq_server, host)


def test_split_ironic_inspector_becomes_api_and_worker(
    tmp_path, postgresql_admin, ironic_url, broker, processes
):
    _installed()
    kombu_url, host = broker
    memcached = dlm_url("memcached")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ironic_api = IronicAPI(ironic_url)
    with (
        _database(postgresql_admin) as source,
        scratch_database(postgresql_admin) as own_database,
    ):
        # ironic-inspector's split mode: API and conductor over RabbitMQ, locks in memcached.
        theirs = tmp_path / "ironic-inspector.conf"
        theirs.write_text(
            render_config(
                {
                    "DEFAULT": {
                        "standalone": False,
                        "transport_url": rabbit_url(kombu_url),
                        "host": host,
                        "auth_strategy": "noauth",
                        "listen_address": "127.0.0.1",
                        "listen_port": port,
                        "introspection_delay": 0,
                    },
                    "database": {"connection": source},
                    "coordination": {"backend_url": memcached},
                    "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
                    "processing": {"store_data": "database"},
                    "pxe_filter": {"driver": "noop"},
                }
            )
        )
        try:
            subprocess.run(
                [SCRIPT, "dbsync", "--config-file", theirs, "upgrade"],
                check=True,
                capture_output=True,
                timeout=120,
            )
            conductor = processes.start(
                "ironic-inspector-conductor", [SCRIPT, "conductor", "--config-file", theirs]
            )
            api = processes.start(
                "ironic-inspector-api", [SCRIPT, "api", str(port), "--config-file", theirs]
            )
            processes.answers(api, url)
            engine = create_engine(
                make_url(source).set(drivername="postgresql+psycopg"), poolclass=NullPool
            )
            try:
                ii = IronicInspector(url, engine, source)
                rule, finished, waiting = create_state(ii, ironic_api)
            finally:
                engine.dispose()
            # 1. Stop ironic-inspector: every API and conductor process.
            for process in (api, conductor):
                processes.stop(process)
            # 2. Its file as it is (its memcached too); ours: Inspector's database, and the
            # queue named after the test, to isolate it. No [coordination] single_host.
            ours = tmp_path / "inspector.conf"
            ours.write_text(
                render_config(
                    {
                        "DEFAULT": {"state_path": tmp_path / "state"},
                        "database": {"connection": own_database},
                        "queue": {"queue_name": host},
                    }
                )
            )
            both = files(theirs, ours)
            # 3-5. Schema, import.
            inspector("db", "upgrade", *both)
            imports = ["db", "import-ironic-inspector", *both, "--source-connection", source]
            output = inspector(*imports)
            assert "node: 2 created" in output and "rule: 1 created" in output
            # The guide's check passes for each role on its memcached, and says the caveat.
            for role in ("api", "worker"):
                assert CAVEAT in inspector("config", "check", "--role", role, *both)
            # 6. inspector api + inspector worker on the same files.
            ours_api = processes.start("inspector-api", [*INSPECTOR, "api", *both])
            worker = processes.start("inspector-worker", [*INSPECTOR, "worker", *both])
            processes.answers(ours_api, url)
            wait_for(
                lambda: POOL_STARTED in processes.log(worker),
                START_TIMEOUT,
                0.1,
                lambda: f"the worker's pool\n{processes.log(worker)}",
            )
            for process in (ours_api, worker):
                log = processes.log(process)
                assert (
                    "ironic-inspector's [DEFAULT] transport_url (its split mode: [DEFAULT] "
                    "standalone = false) is taken as [queue] transport_url = amqp://"
                ) in log
                assert log.count(CAVEAT) == 1, log
            # Check with the client.
            client = ClientV1(inspector_url=url, api_version="1.18")
            assert_imported(client, rule, finished, waiting)
            ramdisk_posts(url, ironic_api, waiting)
            assert wait_finished(client, waiting["uuid"])["error"] is None
            # A new introspection, against the real Ironic, through the queue and the DLM.
            node = ironic_api.enroll()
            client.introspect(node["uuid"])
            wait_for(
                lambda: client.get_status(node["uuid"])["state"] == "waiting",
                START_TIMEOUT,
                0.1,
                "the new node waiting",
            )
            ramdisk_posts(url, ironic_api, node)
            status = wait_finished(client, node["uuid"])
            assert (status["state"], status["error"]) == ("finished", None)
            for process in (ours_api, worker):
                assert processes.stop(process) == 0
        finally:
            ironic_api.delete_nodes()


# ---------------------------------------------------------------- its option list


def test_the_option_list_is_ironic_inspectors_own(tmp_path):
    """tests/fixtures/upstream's list (and so docs/configuration.md's table) is what the
    installed ironic-inspector 12.5.0's own option definitions say."""
    _installed()
    bin_dir = subprocess.run(
        [SCRIPT, "bin"], check=True, capture_output=True, text=True, timeout=30
    ).stdout.strip()
    output = tmp_path / "sample.json"
    namespaces = [arg for name in NAMESPACES for arg in ("--namespace", name)]
    subprocess.run(
        [
            f"{bin_dir}/oslo-config-generator",
            "--format",
            "json",
            "--output-file",
            output,
            *namespaces,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    generated = json.loads(output.read_text())["options"]
    theirs = [
        (
            group,
            opt["name"],
            [
                f"[{old['group'] or group}] {old['name'] or opt['name']}"
                for old in opt["deprecated_opts"]
            ],
        )
        for group, body in generated.items()
        for opt in body["opts"]
    ]
    assert theirs == upstream_options(), f"{UPSTREAM} differs from ironic-inspector's options"
