"""`inspector db upgrade`'s lock on MySQL and MariaDB (GET_LOCK), and a Galera cluster,
which has none."""

import logging

import pymysql
import pytest
from sqlalchemy import exc

from inspector import errors
from inspector.store import schema


class Connection:
    """Answers GET_LOCK with `answer`, or raises the driver error `error`."""

    def __init__(self, answer=None, error=None):
        self.answer, self.error, self.statements = answer, error, []

    def execute(self, statement, params):
        self.statements.append((str(statement), params))
        if self.error is not None:
            raise exc.OperationalError(str(statement), params, self.error)
        return self

    def scalar(self):
        return self.answer


def test_the_upgrade_waits_for_the_named_lock():
    connection = Connection(answer=1)
    schema._lock_mysql(connection)
    [(sql, params)] = connection.statements
    assert "GET_LOCK" in sql
    assert params == {
        "name": schema.MYSQL_MIGRATION_LOCK,
        "timeout": schema.MYSQL_MIGRATION_LOCK_TIMEOUT,
    }


def test_a_lock_not_granted_stops_the_upgrade():
    with pytest.raises(errors.InspectorError, match="GET_LOCK: None"):
        schema._lock_mysql(Connection(answer=None))


def test_galera_without_named_locks_upgrades_without_and_says_so(caplog):
    refused = pymysql.err.NotSupportedError(
        schema.MYSQL_NOT_SUPPORTED,
        "This version of MariaDB doesn't yet support 'GET_LOCK in cluster (WSREP_ON=ON)'",
    )
    with caplog.at_level(logging.WARNING, logger="inspector.store.schema"):
        schema._lock_mysql(Connection(error=refused))
    assert "run one at a time" in caplog.text


def test_another_database_error_stops_the_upgrade():
    lost = pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
    with pytest.raises(exc.OperationalError):
        schema._lock_mysql(Connection(error=lost))
