"""Shared fixtures: real services for integration tests.

A missing service skips the test on a laptop and fails it when CI is set, so that a
broken CI cannot turn green by skipping.
"""

import os
import uuid
from collections.abc import Iterator
from typing import NoReturn

import kombu
import kombu.exceptions
import pytest
import redis
import sqlalchemy
from sqlalchemy import exc, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import NullPool

#: Where the tests find PostgreSQL; `eval "$(scripts/services env)"` sets it.
POSTGRESQL_ENV = "INSPECTOR_TEST_POSTGRESQL_URL"
#: Where the tests find Redis and RabbitMQ; set the same way.
REDIS_ENV = "INSPECTOR_TEST_REDIS_URL"
RABBITMQ_ENV = "INSPECTOR_TEST_RABBITMQ_URL"


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


@pytest.fixture(scope="session")
def postgresql_admin() -> Iterator[Engine]:
    """An autocommit engine on the server named by INSPECTOR_TEST_POSTGRESQL_URL."""
    raw = os.environ.get(POSTGRESQL_ENV)
    if not raw:
        service_unavailable(
            f"{POSTGRESQL_ENV} is not set: scripts/services start postgresql, "
            'then eval "$(scripts/services env)"'
        )
    url = make_url(raw)
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
            f"PostgreSQL at {url.render_as_string(hide_password=True)} "
            f"does not answer: {error.orig}"
        )
    yield engine
    engine.dispose()


@pytest.fixture
def postgresql_url(postgresql_admin: Engine) -> Iterator[str]:
    """The URL of a new, empty database, dropped after the test."""
    name = f"inspector_test_{uuid.uuid4().hex[:12]}"
    with postgresql_admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url: URL = postgresql_admin.url.set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with postgresql_admin.connect() as connection:
            # FORCE: a test that failed may have left a connection open.
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


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
    """Remove a test's queue and its dead-letter queue, with what kombu keeps beside them."""
    with kombu.Connection(url, connect_timeout=5) as connection:
        channel = connection.channel()
        for name in (queue_name, f"{queue_name}.dead"):
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
