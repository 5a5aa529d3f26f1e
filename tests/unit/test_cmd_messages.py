"""What the `inspector` command says on standard error: each warning and each error once."""

import logging

import pytest

from inspector import cmd, errors
from inspector.api.logs import setup_logging
from inspector.cmd import config_cmd, db_cmd

pytestmark = pytest.mark.usefixtures("logging_state")

#: Shared backends every role takes, on the embedded SQLite database.
SHARED = """[DEFAULT]
state_path = {state}
[queue]
transport_url = redis://127.0.0.1:6379/0
[coordination]
backend_url = redis://127.0.0.1:6379
"""


def _config(tmp_path, text: str = SHARED) -> list[str]:
    path = tmp_path / "inspector.conf"
    path.write_text(text.format(state=tmp_path / "state"))
    return ["--config-file", str(path)]


def test_config_check_says_a_warning_the_roles_share_once(tmp_path, capfd):
    assert cmd.main(["config", "check", *_config(tmp_path)]) == 0
    err = capfd.readouterr().err
    assert err.count("Embedded SQLite database") == 1, err


def test_a_command_error_is_one_line_on_standard_error(tmp_path, capfd):
    missing = tmp_path / "missing.sqlite"
    argv = ["db", "import-ironic-inspector", "--source-connection", f"sqlite:///{missing}"]
    assert cmd.main(["db", "upgrade", *_config(tmp_path)]) == 0
    capfd.readouterr()
    assert cmd.main([*argv, *_config(tmp_path)]) == 1
    err = capfd.readouterr().err
    assert err.splitlines() == [
        f"inspector: cannot read the ironic-inspector database sqlite:///{missing}: "
        "unable to open database file"
    ]


def test_a_service_logging_to_a_file_logs_its_error_there_too(tmp_path, capfd, monkeypatch):
    log = tmp_path / "inspector.log"

    def failing(_args, argv):
        conf = db_cmd.config.load(argv)
        conf.set_override("log_file", str(log))
        setup_logging(conf)
        raise errors.InspectorError("the database is unavailable")

    monkeypatch.setattr(db_cmd, "run_version", failing)
    assert cmd.main(["db", "version", *_config(tmp_path)]) == 1
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert capfd.readouterr().err == "inspector: the database is unavailable\n"
    [line] = [each for each in log.read_text().splitlines() if "unavailable" in each]
    assert "ERROR inspector.cmd" in line and "InspectorError" not in line


def test_a_warning_said_once_reaches_every_handler_once():
    class Recording(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    root = logging.getLogger()
    both = [Recording(), Recording()]
    for handler in both:
        root.addHandler(handler)
    with config_cmd._said_once():
        for _role in ("api", "worker"):
            logging.getLogger("inspector.cmd.wiring").warning("Embedded SQLite database")
    logging.getLogger("inspector.cmd.wiring").warning("Embedded SQLite database")
    assert [h.messages for h in both] == [["Embedded SQLite database"] * 2] * 2
