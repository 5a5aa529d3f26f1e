"""The `inspector` command as a user runs it: real processes, real sockets, real signals."""

import contextlib
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import sqlalchemy
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from inspector.store import Store, schema
from tests.conftest import service_unavailable

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).parents[2]
INSPECTOR = [sys.executable, "-m", "inspector.cmd"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate, timeout=20.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)  # polling a condition with a deadline, not a fixed wait
    raise AssertionError(f"condition not met within {timeout} s")


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except OSError:  # URLError, a refused or reset connection, or no answer in time
        return None


@pytest.fixture
def config_file(tmp_path):
    port = free_port()
    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\nlisten_port = {port}\n")
    return path, port


@contextlib.contextmanager
def running(args, log_path, **kwargs):
    """The command as a child process; killed at the end if it is still running."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            INSPECTOR + args, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True, **kwargs
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def run(args, **kwargs):
    return subprocess.run(
        INSPECTOR + args,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        **kwargs,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_all_serves_versions_and_stops_on_signal(config_file, signum):
    path, port = config_file
    with running(["all", "--config-file", str(path)], path.parent / "log") as process:
        status, headers, body = wait_for(lambda: get(f"http://127.0.0.1:{port}/"))
        assert status == 200
        assert body["versions"][0]["id"] == "1.19"
        assert body["versions"][0]["links"][0]["href"] == f"http://127.0.0.1:{port}/v1"
        assert headers["X-OpenStack-Ironic-Inspector-API-Minimum-Version"] == "1.0"
        assert headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"
        _, _, v1 = get(f"http://127.0.0.1:{port}/v1")
        assert {r["name"] for r in v1["resources"]} == {
            "continue",
            "introspection",
            "rules",
        }
        assert (path.parent / "state" / "inspector.sqlite").exists()
        process.send_signal(signum)
        assert process.wait(timeout=15) == 0


def test_all_stopped_during_a_periodic_run_records_the_run_stopped(config_file):
    """SIGTERM while the periodic task `timeout` runs (held by a fault for up to 10 min):
    the run is recorded stopped, nothing is left unfinished, no traceback."""
    path, _ = config_file
    log = path.parent / "log"
    env = dict(os.environ, INSPECTOR_FAULTS="slow_periodic=timeout:600")
    with running(["all", "--config-file", str(path)], log, env=env) as process:
        wait_for(lambda: "Elected periodic leader" in log.read_text())
        db = Store.from_url(f"sqlite:///{path.parent / 'state' / 'inspector.sqlite'}")
        try:
            wait_for(lambda: db.task_runs("timeout"))
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
            runs = db.task_runs()
        finally:
            db.close()
    text = log.read_text()
    assert "Uncaught exception" not in text and "Traceback" not in text, text
    assert [r for r in runs if r.finished_at is None or not r.outcome] == []
    (stopped,) = [r for r in runs if r.task == "timeout"]
    assert stopped.outcome == "stopped: no longer the periodic leader (term 1): stopping"


def test_all_without_any_configuration_uses_defaults(tmp_path):
    if get("http://127.0.0.1:5050/") is not None:
        service_unavailable("something already listens on 127.0.0.1:5050, the default port")
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"))
    with running(["all"], tmp_path / "log", env=env) as process:
        status, _, body = wait_for(lambda: get("http://127.0.0.1:5050/"))
        assert status == 200
        assert "versions" in body
        root = os.geteuid() == 0
        state = pathlib.Path("/var/lib" if root else tmp_path / "data", "inspector")
        assert (state / "inspector.sqlite").exists()
        process.terminate()
        assert process.wait(timeout=15) == 0


def test_invalid_configuration_stops_start_up_with_a_clear_message(tmp_path):
    path = tmp_path / "bad.conf"
    path.write_text("[firewall]\nblacklist_sync_period = 45\n")
    result = run(["all", "--config-file", str(path)])
    assert result.returncode == 2
    assert "[firewall] blacklist_sync_period" in result.stderr
    assert "from 0.0 to 30.0" in result.stderr


def test_config_check(config_file):
    path, _ = config_file
    result = run(["config", "check", "--config-file", str(path)])
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout


def test_config_sample_matches_the_shipped_file():
    result = run(["config", "sample"])
    assert result.returncode == 0, result.stderr
    shipped = (ROOT / "etc" / "inspector" / "inspector.conf.sample").read_text()
    assert result.stdout == shipped


def test_db_upgrade_then_version(config_file):
    path, _ = config_file
    before = run(["db", "version", "--config-file", str(path)])
    assert before.returncode == 1
    assert "no schema" in before.stdout
    upgraded = run(["db", "upgrade", "--config-file", str(path)])
    assert upgraded.returncode == 0, upgraded.stderr
    assert "upgraded from empty to" in upgraded.stdout
    again = run(["db", "upgrade", "--config-file", str(path)])
    assert "already at" in again.stdout
    after = run(["db", "version", "--config-file", str(path)])
    assert after.returncode == 0
    assert after.stdout.strip().endswith("(head)")


#: Another `inspector db upgrade` in progress, per server: the SQL that takes its lock,
#: the SQL that releases it, and the SQL that counts the sessions waiting for it.
UPGRADE_LOCKS = {
    "postgresql": (
        f"SELECT pg_advisory_lock({schema.PG_MIGRATION_LOCK})",
        f"SELECT pg_advisory_unlock({schema.PG_MIGRATION_LOCK})",
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event = 'advisory'",
    ),
    "mysql": (
        f"SELECT GET_LOCK('{schema.MYSQL_MIGRATION_LOCK}', 0)",
        f"SELECT RELEASE_LOCK('{schema.MYSQL_MIGRATION_LOCK}')",
        "SELECT count(*) FROM information_schema.processlist "
        "WHERE db = DATABASE() AND state = 'User lock'",
    ),
}


def test_db_upgrade_on_a_server_waits_for_another_one(tmp_path, server_url):
    # MySQL commits each DDL statement: two upgrades at once would fail half-way.
    path = tmp_path / "inspector.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n[database]\nconnection = {server_url}\n"
    )
    before = run(["db", "version", "--config-file", str(path)])
    assert before.returncode == 1 and "no schema" in before.stdout, before.stderr
    take, release, waiting = UPGRADE_LOCKS[make_url(server_url).get_backend_name()]
    other = sqlalchemy.create_engine(server_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    log = tmp_path / "upgrade.log"
    try:
        with other.connect() as connection:
            connection.exec_driver_sql(take)
            with running(["db", "upgrade", "--config-file", str(path)], log) as upgrade:
                wait_for(
                    lambda: (
                        upgrade.poll() is not None or connection.exec_driver_sql(waiting).scalar()
                    )
                )
                assert upgrade.poll() is None, f"did not wait for the lock:\n{log.read_text()}"
                connection.exec_driver_sql(release)
                assert upgrade.wait(timeout=60) == 0, log.read_text()
    finally:
        other.dispose()
    assert "upgraded from empty to" in log.read_text()
    after = run(["db", "version", "--config-file", str(path)])
    assert after.returncode == 0 and after.stdout.strip().endswith("(head)"), after.stderr


def test_unknown_subcommand_is_a_usage_error():
    result = run(["frobnicate"])
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_wsgi_application_serves(tmp_path):
    from inspector.api.wsgi import LazyApplication  # noqa: PLC0415

    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\nauth_strategy = noauth\n")
    application = LazyApplication({"INSPECTOR_CONFIG_FILES": str(path)})
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/",
        "SERVER_NAME": "inspector.example.com",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
        "wsgi.input": None,
    }
    seen = {}

    def start_response(status, headers):
        seen["status"] = status
        seen["headers"] = dict(headers)

    body = b"".join(application(environ, start_response))
    assert seen["status"].startswith("200")
    assert json.loads(body)["versions"][0]["id"] == "1.19"


def test_wsgi_application_refuses_keystone_without_a_service_user(tmp_path):
    """ironic-inspector's default strategy, keystone, with an empty [keystone_authtoken]:
    the first request fails loudly, naming what to set (not every later one with an
    empty 500)."""
    from inspector.api.wsgi import LazyApplication  # noqa: PLC0415
    from inspector.errors import ConfigError  # noqa: PLC0415

    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    application = LazyApplication({"INSPECTOR_CONFIG_FILES": str(path)})
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", "wsgi.input": None}
    with pytest.raises(ConfigError, match=r"\[keystone_authtoken\] auth_type is not set"):
        application(environ, lambda status, headers: None)


def _at_first_revision(state: pathlib.Path) -> str:
    """An SQLite database migrated only to the first shipped revision."""
    from alembic import command  # noqa: PLC0415

    from inspector.store import default_url, schema  # noqa: PLC0415
    from inspector.store import engine as engines  # noqa: PLC0415

    state.mkdir(parents=True, exist_ok=True)
    url = default_url(state)
    engine = engines.create_engine(url)
    with engine.begin() as connection:
        command.upgrade(schema._config(connection), schema.chain()[0][0])
    engine.dispose()
    return schema.chain()[0][0]


def test_services_refuse_a_schema_missing_expand_revisions(tmp_path):
    first = _at_first_revision(tmp_path / "state")
    path = tmp_path / "inspector.conf"
    path.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path / 'state'}\n"
        "[queue]\ntransport_url = redis://127.0.0.1:9/\n"
        "[coordination]\nbackend_url = redis://127.0.0.1:9\n"
    )
    refused = run(["worker", "--config-file", str(path)])
    assert refused.returncode != 0
    assert f"schema is at {first}" in refused.stderr
    assert "inspector db upgrade --expand" in refused.stderr
    version = run(["db", "version", "--config-file", str(path)])
    assert version.returncode == 1 and "(expand)" in version.stdout
    expanded = run(["db", "upgrade", "--expand", "--config-file", str(path)])
    assert expanded.returncode == 0, expanded.stderr
    assert "applied:" in expanded.stdout and "(expand)" in expanded.stdout
    assert run(["db", "version", "--config-file", str(path)]).stdout.strip().endswith("(head)")
