"""Shared fixtures: real services for integration tests.

A missing service skips the test on a laptop and fails it when CI is set, so that a
broken CI cannot turn green by skipping.
"""

import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import kombu
import kombu.exceptions
import pytest
import redis
import requests
import sqlalchemy
from sqlalchemy import exc, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import NullPool

from inspector.store import Store, schema
from tests.fakes.redis_server import fake_redis

#: Where the tests find PostgreSQL; `eval "$(scripts/services env)"` sets it.
POSTGRESQL_ENV = "INSPECTOR_TEST_POSTGRESQL_URL"
#: Where the tests find MariaDB (or MySQL); set the same way (scripts/services start mariadb).
MYSQL_ENV = "INSPECTOR_TEST_MYSQL_URL"
#: Where the tests find Redis and RabbitMQ; set the same way.
REDIS_ENV = "INSPECTOR_TEST_REDIS_URL"
RABBITMQ_ENV = "INSPECTOR_TEST_RABBITMQ_URL"
#: Where the tests find a standalone Ironic (scripts/services start ironic).
IRONIC_ENV = "INSPECTOR_TEST_IRONIC_URL"
#: The Bare Metal API microversion of the tests' own calls to Ironic.
IRONIC_API_VERSION = "1.81"


def pytest_configure(config: pytest.Config) -> None:
    # openstacksdk 4.2x warns about its own internals on every request and every resource
    # it builds (RemovedInSDK50Warning, raised inside openstack.*, about nothing we pass);
    # outside tests Python ignores PendingDeprecationWarning anyway. A deprecation that
    # our own call triggers is attributed to our module and still fails the test.
    config.addinivalue_line("filterwarnings", "ignore::PendingDeprecationWarning:openstack.*")
    config.addinivalue_line(
        "markers", "mysql: needs a MariaDB or MySQL server (scripts/services starts MariaDB)"
    )


def service_unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)")
    pytest.skip(reason)


def service_url(variable: str, service: str) -> str:
    url = os.environ.get(variable)
    if not url:
        service_unavailable(
            f"{variable} is not set: scripts/services start {service}, "
            'then eval "$(scripts/services env)"'
        )
    return url


#: The database servers the tests use: the variable naming each, the service that
#: scripts/services starts, and how messages name it.
SERVERS = {
    "postgresql": (POSTGRESQL_ENV, "postgresql", "PostgreSQL"),
    "mysql": (MYSQL_ENV, "mariadb", "MariaDB"),
}
#: What DROP DATABASE takes to end the sessions a failed test left (PostgreSQL 13+).
DROP_FORCE = {"postgresql": " WITH (FORCE)"}


def _admin_engine(backend: str) -> Iterator[Engine]:
    """An autocommit engine on the server of `backend`, once it answered."""
    variable, service, name = SERVERS[backend]
    url = make_url(service_url(variable, service))
    engine = sqlalchemy.create_engine(
        url,
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": 5},
    )
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except exc.DBAPIError as error:
        engine.dispose()
        service_unavailable(
            f"{name} at {url.render_as_string(hide_password=True)} does not answer: {error.orig}"
        )
    yield engine
    engine.dispose()


def end_connections(admin: Engine, database: str) -> int:
    """End every other session on `database` (as a server restart would); how many."""
    with admin.connect() as connection:
        if admin.dialect.name == "postgresql":
            return connection.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": database},
            ).scalar()
        ids = connection.execute(
            text(
                "SELECT id FROM information_schema.processlist "
                "WHERE db = :name AND id <> CONNECTION_ID()"
            ),
            {"name": database},
        ).scalars()
        ended = 0
        for ident in ids:
            try:
                connection.execute(text(f"KILL CONNECTION {int(ident):d}"))
                ended += 1
            except exc.OperationalError as error:  # it ended on its own meanwhile
                if error.orig.args[0] != 1094:  # ER_NO_SUCH_THREAD
                    raise
        return ended


#: Seconds a drop retries while PostgreSQL's autovacuum works on the database: WITH
#: (FORCE) cannot end that superuser's process for the test user (PostgreSQL 15).
DROP_RETRY = 30.0


def drop_database(admin: Engine, name: str) -> None:
    """DROP DATABASE name on admin's server, ending the sessions a failed test left."""
    backend = admin.dialect.name
    quoted = admin.dialect.identifier_preparer.quote_identifier(name)
    if backend not in DROP_FORCE:
        # A test that failed may have left a transaction open: DROP would wait on it.
        end_connections(admin, name)
    deadline = time.monotonic() + DROP_RETRY
    while True:
        try:
            with admin.connect() as connection:
                connection.execute(
                    text(f"DROP DATABASE IF EXISTS {quoted}{DROP_FORCE.get(backend, '')}")
                )
            return
        except exc.ProgrammingError as error:
            if "pg_signal_backend" not in str(error.orig) or time.monotonic() > deadline:
                raise
        time.sleep(0.2)  # autovacuum's turn on a small database ends within a second


def _new_database(admin: Engine) -> Iterator[str]:
    """The URL of a new, empty database on `admin`'s server, dropped after the test (the
    test user may create any database named inspector_test*)."""
    name = f"inspector_test_{uuid.uuid4().hex[:12]}"
    quoted = admin.dialect.identifier_preparer.quote_identifier(name)
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {quoted}"))
    url: URL = admin.url.set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        drop_database(admin, name)


def _store(url: str) -> Iterator[Store]:
    """A Store on `url`, its schema upgraded; closed after the test."""
    schema.upgrade(url)
    db = Store.from_url(url)
    yield db
    db.close()


def _server_fixtures(backend: str):
    """`<backend>_admin`: an autocommit engine on the server, for the session;
    `<backend>_url`: a new, empty database on it per test, dropped after the test;
    `<backend>_store`: a Store on that database, its schema upgraded."""

    @pytest.fixture(scope="session", name=f"{backend}_admin")
    def admin() -> Iterator[Engine]:
        yield from _admin_engine(backend)

    @pytest.fixture(name=f"{backend}_url")
    def url(request: pytest.FixtureRequest) -> Iterator[str]:
        yield from _new_database(request.getfixturevalue(f"{backend}_admin"))

    @pytest.fixture(name=f"{backend}_store")
    def store(request: pytest.FixtureRequest) -> Iterator[Store]:
        yield from _store(request.getfixturevalue(f"{backend}_url"))

    return admin, url, store


#: PostgreSQL (INSPECTOR_TEST_POSTGRESQL_URL) and MariaDB (INSPECTOR_TEST_MYSQL_URL).
postgresql_admin, postgresql_url, postgresql_store = _server_fixtures("postgresql")
mysql_admin, mysql_url, mysql_store = _server_fixtures("mysql")


#: The server databases the store's generic tests run on, each with its marks.
SERVER_DATABASES = [
    pytest.param("postgresql", marks=[pytest.mark.postgresql, pytest.mark.integration]),
    pytest.param("mysql", marks=[pytest.mark.mysql, pytest.mark.integration]),
]


@pytest.fixture(params=SERVER_DATABASES)
def server_url(request: pytest.FixtureRequest) -> str:
    """A new, empty database on each server in turn: PostgreSQL, then MariaDB."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def server_admin(request: pytest.FixtureRequest, server_url: str) -> Engine:
    """The admin engine of the server `server_url` is on."""
    backend = make_url(server_url).get_backend_name()
    return request.getfixturevalue(f"{backend}_admin")


@pytest.fixture
def server_store(server_url: str) -> Iterator[Store]:
    """A Store on a new database of each server in turn, its schema upgraded."""
    yield from _store(server_url)


@pytest.fixture(params=["sqlite", *SERVER_DATABASES])
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """A new, empty database on each database in turn: SQLite, PostgreSQL, MariaDB."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(scope="session")
def redis_server() -> str:
    """The URL in INSPECTOR_TEST_REDIS_URL, once the server answered a PING."""
    url = service_url(REDIS_ENV, "redis")
    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as error:
        service_unavailable(f"Redis at {url} does not answer: {error}")
    finally:
        client.close()
    return url


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """A Redis server; isolate what a test writes by names (see `queue_name`)."""
    return redis_server


@pytest.fixture
def fakeredis_url() -> Iterator[str]:
    """A fresh Redis inside the test process (fakeredis), for the contract suites whose
    backend runs on it; per test, since it patches redis-py's INFO while it serves."""
    with fake_redis() as url:
        yield url


@pytest.fixture(scope="session")
def rabbitmq_server() -> str:
    """The URL in INSPECTOR_TEST_RABBITMQ_URL, once the broker accepted a connection."""
    url = service_url(RABBITMQ_ENV, "rabbitmq")
    connection = kombu.Connection(url, connect_timeout=5)
    try:
        connection.ensure_connection(max_retries=0, reraise_as_library_errors=True)
    except kombu.exceptions.OperationalError as error:
        service_unavailable(f"RabbitMQ at {connection.as_uri()} does not answer: {error}")
    finally:
        connection.release()
    return url


@pytest.fixture
def rabbitmq_url(rabbitmq_server: str) -> str:
    """A RabbitMQ broker (vhost /); isolate what a test writes by names (`queue_name`)."""
    return rabbitmq_server


def delete_queues(url: str, queue_name: str) -> None:
    """Remove a test's queue (both lanes) and its dead-letter queue, with what kombu keeps
    beside them."""
    with kombu.Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        for name in (queue_name, f"{queue_name}.start", f"{queue_name}.dead"):
            channel.queue_delete(name)
        if url.startswith("redis"):
            for key in channel.client.scan_iter(match=f"{queue_name}*"):
                channel.client.delete(key)


@pytest.fixture
def queue_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A queue name no other test uses; deleted afterwards from the servers the test used."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    for fixture, variable in (("redis_url", REDIS_ENV), ("rabbitmq_url", RABBITMQ_ENV)):
        if fixture in request.fixturenames:
            delete_queues(os.environ[variable], name)


@pytest.fixture(scope="session")
def ironic_url() -> str:
    """The URL in INSPECTOR_TEST_IRONIC_URL, once Ironic answered GET /v1."""
    url = service_url(IRONIC_ENV, "ironic").rstrip("/")
    try:
        requests.get(f"{url}/v1", timeout=5).raise_for_status()
    except requests.RequestException as error:
        service_unavailable(f"Ironic at {url} does not answer: {error}")
    return url


class IronicAPI:
    """The test Ironic over plain REST (not our client); what it creates is deleted after."""

    #: Seconds Ironic gets to reach a state the test waits for.
    TIMEOUT = 30.0

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["X-OpenStack-Ironic-API-Version"] = IRONIC_API_VERSION
        self.node_uuids: list[str] = []

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The decoded answer to method path (under /v1); fails the test on an error."""
        response = self.session.request(method, f"{self.url}/v1{path}", json=body, timeout=10)
        assert response.ok, f"{method} {path}: HTTP {response.status_code} {response.text}"
        return response.json() if response.content else None

    def get_node(self, ident: str) -> dict:
        return self.request("GET", f"/nodes/{ident}")

    def node_ports(self, node_uuid: str) -> list[dict]:
        return self.request("GET", f"/ports/detail?node_uuid={node_uuid}")["ports"]

    @staticmethod
    def new_mac() -> str:
        """A locally administered MAC no other test uses (Ironic's MACs are unique)."""
        digits = uuid.uuid4().hex[:10]
        return "02:" + ":".join(digits[i : i + 2] for i in range(0, 10, 2))

    def track(self, node_uuid: str) -> str:
        """Delete this node (and its ports) after the test, whoever created it."""
        self.node_uuids.append(node_uuid)
        return node_uuid

    def enroll(
        self, name: str | None = None, *, macs: int = 1, manage: bool = True, **fields: Any
    ) -> dict:
        """A fake-hardware node with `macs` PXE ports, manageable unless manage is False."""
        body = {"name": name or f"test-{uuid.uuid4().hex[:12]}", "driver": "fake-hardware"}
        node = self.request("POST", "/nodes", {**body, **fields})
        self.track(node["uuid"])
        for _ in range(macs):
            port = {"node_uuid": node["uuid"], "address": self.new_mac(), "pxe_enabled": True}
            self.request("POST", "/ports", port)
        if manage:
            self.request("PUT", f"/nodes/{node['uuid']}/states/provision", {"target": "manage"})
            node = self.wait_for(node["uuid"], lambda n: n["provision_state"] == "manageable")
        return node

    def wait_for(self, ident: str, condition: Callable[[dict], bool]) -> dict:
        """The node once condition(node) holds; fails the test after TIMEOUT."""
        deadline = time.monotonic() + self.TIMEOUT
        while True:
            node = self.get_node(ident)
            if condition(node):
                return node
            if time.monotonic() > deadline:
                pytest.fail(f"node {ident} did not get there in {self.TIMEOUT}s: {node}")
            time.sleep(0.1)

    def delete_nodes(self) -> None:
        """Delete every tracked node; its ports go with it. A node still locked by its last
        power action is retried until TIMEOUT."""
        deadline = time.monotonic() + self.TIMEOUT
        for node_uuid in self.node_uuids:
            while True:
                response = self.session.delete(f"{self.url}/v1/nodes/{node_uuid}", timeout=10)
                if response.status_code in (204, 404):
                    break
                if response.status_code != 409 or time.monotonic() > deadline:
                    raise AssertionError(f"cannot delete node {node_uuid}: {response.text}")
                time.sleep(0.1)
        self.node_uuids.clear()


@pytest.fixture
def ironic_api(ironic_url: str) -> Iterator[IronicAPI]:
    """Plain REST calls to the test Ironic: enroll nodes with ports; deleted afterwards."""
    api = IronicAPI(ironic_url)
    try:
        yield api
    finally:
        api.delete_nodes()
        api.session.close()
