"""What each role asks of a configuration (inspector.cmd.roles): ironic-inspector's
standalone and split files, its settings no role can honour, and `inspector config check
--role` answering as start-up does (the same functions)."""

import logging
import pathlib
import re
import subprocess
import sys
import threading

import pytest

from inspector import cmd
from inspector import conf as config
from inspector.cmd import roles

ROOT = pathlib.Path(__file__).parents[2]
STANDALONE = pathlib.Path(__file__).parent / "data" / "ironic-inspector.conf"
RABBIT = "rabbit://inspector:secret@127.0.0.1:5672/"
#: ironic-inspector's split mode: API and conductor over RabbitMQ, locks in memcached.
SPLIT = f"""[DEFAULT]
standalone = false
transport_url = {RABBIT}
auth_strategy = noauth
[database]
connection = postgresql+psycopg2://inspector:secret@db/ironic_inspector
[coordination]
backend_url = memcached://127.0.0.1:11211
"""
SINGLE_HOST = "[coordination]\nsingle_host = true\n"
#: A queue URL no role can use (kombu has no rabbit:// transport).
NO_QUEUE = "[queue]\ntransport_url = rabbit://h:5672/\n"


def files(tmp_path, *texts: str) -> list[str]:
    args = []
    for index, text in enumerate(texts):
        path = tmp_path / f"{index}.conf"
        path.write_text(text)
        args += ["--config-file", str(path)]
    return args


def verdicts(args: list[str]) -> dict[str, roles.Verdict]:
    conf = config.load(args)
    return {role: roles.check(conf, role) for role in roles.ROLES}


def test_a_split_file_on_several_hosts_starts_every_role_warning_of_memcached(tmp_path, caplog):
    """ironic-inspector's split mode with its memcached DLM, as it ran on several hosts."""
    found = verdicts(files(tmp_path, SPLIT))
    assert not any(verdict.refused for verdict in found.values()), found
    warned = [r.getMessage() for r in caplog.records if "memcached://" in r.getMessage()]
    assert len(warned) == 2, warned  # api's and worker's checks, not all's (one process)


def test_a_split_file_on_one_host_starts_every_role(tmp_path):
    found = verdicts(files(tmp_path, SPLIT, SINGLE_HOST))
    assert not any(verdict.refused for verdict in found.values()), found
    assert "is taken as [queue] transport_url = amqp://inspector:***@" in found["api"].taken[0]


def test_a_standalone_file_is_inspector_all(tmp_path):
    found = verdicts(["--config-file", str(STANDALONE)])
    assert not found["all"].refused
    for role in ("api", "worker"):
        message = found[role].message()
        assert "[queue] transport_url = memory:// only works inside one process" in message
        assert "[DEFAULT] transport_url = fake:// is not taken as the queue" in message
        assert "standalone = true (the default) is one process" in message
        assert "set [DEFAULT] standalone = false (its split mode) or [queue] transport_url" in (
            message
        )


@pytest.mark.parametrize(
    ("setting", "names"),
    [
        ("use_ssl = true", "[DEFAULT] use_ssl = true"),
        ("listen_unix_socket = /run/inspector.sock", "[DEFAULT] listen_unix_socket"),
    ],
)
def test_what_the_api_cannot_serve_stops_the_roles_that_serve_it(tmp_path, setting, names):
    found = verdicts(files(tmp_path, SPLIT, SINGLE_HOST, f"[DEFAULT]\n{setting}\n"))
    for role in ("api", "all"):
        assert found[role].refused
        assert names in found[role].message()
        assert "listen_address and listen_port" in found[role].message() or (
            "set use_ssl = false" in found[role].message()
        )
    assert not found["worker"].refused


def test_publish_errors_stops_every_role(tmp_path):
    found = verdicts(files(tmp_path, SPLIT, SINGLE_HOST, "[DEFAULT]\npublish_errors = true\n"))
    for verdict in found.values():
        assert "[DEFAULT] publish_errors = true" in verdict.message()


def test_a_queue_url_kombu_cannot_use_is_refused_by_every_role(tmp_path):
    found = verdicts(files(tmp_path, NO_QUEUE))
    for verdict in found.values():
        assert "[queue] transport_url: queue URL 'rabbit://h:5672/': unknown transport" in (
            verdict.message()
        )


def test_an_unreadable_tls_file_is_refused(tmp_path):
    found = verdicts(
        files(
            tmp_path,
            SPLIT,
            SINGLE_HOST,
            f"[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = {tmp_path / 'none.pem'}\n",
        )
    )
    for verdict in found.values():
        assert "[oslo_messaging_rabbit] ssl_ca_file: cannot read" in verdict.message()


KEYSTONE = "[DEFAULT]\nauth_strategy = keystone\n"
#: What keystonemiddleware validates tokens with: a service user of Keystone.
SERVICE_USER = """[keystone_authtoken]
www_authenticate_uri = http://keystone.example.com/identity
auth_type = password
auth_url = http://keystone.example.com/identity
username = inspector
password = secret
user_domain_name = Default
project_name = service
project_domain_name = Default
"""


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", "[keystone_authtoken] auth_type is not set"),
        ("[keystone_authtoken]\nauth_type = password\n", "auth_type = password needs auth_url"),
        ("[keystone_authtoken]\nauth_type = nosuch\n", "auth_type = nosuch: no such plugin"),
        ("[keystone_authtoken]\nauth_type = none\n", "auth_type = none sends no credentials"),
        (
            "[keystone_authtoken]\nauth_section = user\n[user]\nauth_type = password\n",
            "[user] auth_type = password needs auth_url",
        ),
    ],
    ids=["empty", "no-auth_url", "unknown-plugin", "none", "auth_section"],
)
def test_keystone_that_cannot_validate_tokens_stops_the_roles_that_serve_the_api(
    tmp_path, text, names
):
    found = verdicts(files(tmp_path, SPLIT, SINGLE_HOST, KEYSTONE, text))
    for role in ("api", "all"):
        assert found[role].refused
        assert "auth_strategy = keystone" in found[role].message()
        assert names in found[role].message()
    assert not found["worker"].refused
    assert "secret" not in found["api"].message()


def test_config_check_without_a_role_judges_all_on_its_own_default(tmp_path, capsys):
    # No auth_strategy in the file: `inspector api` would use keystone (refused without
    # a service user), `inspector all` noauth.
    assert cmd.main(["config", "check", *files(tmp_path, "[worker]\npool_size = 3\n")]) == 0
    out = capsys.readouterr().out
    assert "[keystone_authtoken] auth_type is not set" in out
    assert out.splitlines()[-1] == "configuration is valid for `inspector all`"


def test_keystone_with_a_service_user_starts_every_role(tmp_path):
    found = verdicts(files(tmp_path, SPLIT, SINGLE_HOST, KEYSTONE, SERVICE_USER))
    assert not any(verdict.refused for verdict in found.values()), found


# ---------------------------------------------------------------- inspector config check


def test_config_check_with_a_role(tmp_path, capsys):
    args = files(tmp_path, SPLIT)
    assert cmd.main(["config", "check", "--role", "all", *args]) == 0
    out = capsys.readouterr().out
    assert "configuration is valid for `inspector all`" in out
    assert "is taken as [queue] transport_url = amqp://" in out
    # ironic-inspector's split mode on its memcached DLM: valid, with memcached's caveat.
    assert cmd.main(["config", "check", "--role", "api", *args]) == 0
    captured = capsys.readouterr()
    assert "configuration is valid for `inspector api`" in captured.out
    assert "memcached is one unreplicated server" in captured.err
    assert cmd.main(["config", "check", "--role", "api", *files(tmp_path, SPLIT, NO_QUEUE)]) == 2
    assert "unknown transport 'rabbit'" in capsys.readouterr().err
    single_host = files(tmp_path, SPLIT, SINGLE_HOST)
    assert cmd.main(["config", "check", "--role", "worker", *single_host]) == 0
    assert "valid for `inspector worker`" in capsys.readouterr().out


def test_config_check_without_a_role_reports_each(tmp_path, capsys):
    assert cmd.main(["config", "check", "--config-file", str(STANDALONE)]) == 0
    out = capsys.readouterr().out
    assert "`inspector api` would refuse it:" in out
    assert "`inspector worker` would refuse it:" in out
    assert out.splitlines()[-1] == "configuration is valid for `inspector all`"
    assert cmd.main(["config", "check", *files(tmp_path, SPLIT, SINGLE_HOST)]) == 0
    out = capsys.readouterr().out
    assert "would refuse" not in out
    assert out.splitlines()[-1] == (
        "configuration is valid for `inspector api`, `inspector worker`, `inspector all`"
    )
    refused = files(tmp_path, SPLIT, NO_QUEUE)
    assert cmd.main(["config", "check", *refused]) == 2
    assert "no role would start" in capsys.readouterr().err


def test_config_check_prints_the_warnings(tmp_path, capfd):
    args = files(tmp_path, SPLIT, "[DEFAULT]\nmax_concurrency = 10\n")
    assert cmd.main(["config", "check", "--role", "all", *args]) == 0
    assert "[DEFAULT] max_concurrency (set in " in capfd.readouterr().err


def _start(role: str, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "inspector.cmd", role, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("role", "texts"),
    [
        ("api", [SPLIT, NO_QUEUE]),
        ("worker", [SPLIT, NO_QUEUE]),
        ("api", ["standalone"]),
        ("all", [SPLIT, "[DEFAULT]\nuse_ssl = true\n"]),
        ("all", [KEYSTONE]),
    ],
    ids=["split-api", "split-worker", "standalone-api", "use_ssl-all", "keystone-all"],
)
def test_start_up_refuses_what_config_check_refuses_with_the_same_message(
    tmp_path, capsys, role, texts
):
    if texts == ["standalone"]:
        # ironic-inspector's own file, but for its log_dir (not on this machine).
        texts = [re.sub(r"^log_dir = .*$", "", STANDALONE.read_text(), flags=re.M)]
    args = files(tmp_path, *texts)
    assert cmd.main(["config", "check", "--role", role, *args]) == 2
    checked = capsys.readouterr().err
    started = _start(role, args)
    assert started.returncode == 2, started.stderr
    assert checked.strip().splitlines()[-1] in started.stderr
    assert checked[checked.index("inspector: ") :] in started.stderr
    assert "Traceback" not in started.stderr


@pytest.fixture
def service_logging():
    """A service's logging set-up, undone after the test (other tests log on)."""
    root = logging.getLogger()
    handlers, level, hook = list(root.handlers), root.level, threading.excepthook
    yield
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    threading.excepthook = hook


def test_start_up_runs_the_role_checks(tmp_path, monkeypatch, service_logging):
    seen = []
    check = roles.check

    def spying(conf, role):
        seen.append(role)
        return check(conf, role)

    monkeypatch.setattr(roles, "check", spying)
    # Refused (no process starts); each role went through roles.check.
    args = files(tmp_path, SPLIT, NO_QUEUE)
    for role in roles.ROLES:
        assert cmd.main([role, *args]) == 2
    assert seen == list(roles.ROLES)
