"""Shared fixtures: real services for integration tests.

A missing service skips the test on a laptop and fails it when CI is set, so that a
broken CI cannot turn green by skipping.
"""

import os
import uuid
from collections.abc import Iterator
from typing import NoReturn

import pytest
import sqlalchemy
from sqlalchemy import exc, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import NullPool

#: Where the tests find PostgreSQL; `eval "$(scripts/services env)"` sets it.
POSTGRESQL_ENV = "INSPECTOR_TEST_POSTGRESQL_URL"


def service_unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)")
    pytest.skip(reason)


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
