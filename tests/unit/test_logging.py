"""oslo.log set up from ironic-inspector's logging options (inspector.api.logs): where the
lines go (log_dir and log_file, a file logrotate may move, standard error for a one-shot
command, the journal, syslog), how (use_json, the context format), what levels
(default_log_levels, debug), a log_config_append file; and on every one of those
handlers, the masking of credentials, in messages and in the exceptions oslo.log's
formatters format themselves."""

import inspect
import json
import logging
import math
import os
import pathlib
import sys
import syslog
import textwrap
import threading
import time
import types

import pytest
from oslo_log import formatters as oslo_formatters
from oslo_log import handlers as oslo_handlers

from inspector import conf as config
from inspector import request_context
from inspector.api import logs
from inspector.api.logs import setup_logging
from inspector.cmd import config_cmd
from inspector.coordination.election import Leadership
from inspector.errors import ConfigError

SECRET = "hunter2-Zq9"
GLOBAL_ID = "req-6f1c0a52-0d5e-4bb8-9a47-2e3c1d0b7a11"
LOG = logging.getLogger("inspector.test_logging")
IRONIC_INSPECTOR_CONF = pathlib.Path(__file__).parent / "data" / "ironic-inspector.conf"

pytestmark = pytest.mark.usefixtures("logging_state")


def load(tmp_path, text: str = ""):
    path = tmp_path / "inspector.conf"
    path.write_text(textwrap.dedent(text))
    return config.load(["--config-file", str(path)])


def log_secrets() -> None:
    """A line quoting a credential, the same with its exception, a warning while that
    exception is handled (oslo.log adds it to the line), in a request's context."""
    context = request_context.Context(request_id="req-own", global_request_id=GLOBAL_ID)
    with request_context.bound(context):
        LOG.info("driver_info {'ipmi_password': '%s'}", SECRET)
        try:
            raise RuntimeError(f"cannot reach rabbit://inspector:{SECRET}@127.0.0.1/")
        except RuntimeError:
            LOG.exception("Connection failed")
            LOG.warning("Retrying the connection")


def flush() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()


def test_log_dir_and_log_file_and_a_file_logrotate_moved(tmp_path):
    conf = load(
        tmp_path,
        f"""
        [DEFAULT]
        log_dir = {tmp_path / "logs"}
        log_file = inspector.log
        """,
    )
    (tmp_path / "logs").mkdir()
    setup_logging(conf)
    path = tmp_path / "logs" / "inspector.log"
    LOG.info("first line")
    os.rename(path, tmp_path / "logs" / "inspector.log.1")  # logrotate's move
    LOG.info("second line")
    flush()
    assert "first line" in (tmp_path / "logs" / "inspector.log.1").read_text()
    assert "second line" in path.read_text()
    assert "first line" not in path.read_text()


def test_every_line_is_masked_and_shows_the_request(tmp_path):
    conf = load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n")
    setup_logging(conf)
    log_secrets()
    flush()
    text = (tmp_path / "inspector.log").read_text()
    assert SECRET not in text
    lines = text.splitlines()
    assert f"INFO inspector.test_logging [{GLOBAL_ID} req-own " in lines[0]
    assert "'ipmi_password': '***'" in lines[0]
    assert "rabbit://inspector:***@127.0.0.1/" in text
    [warning] = [line for line in lines if "Retrying the connection" in line]
    # oslo.log's error summary: the exception being handled, masked as well.
    assert warning.endswith("RuntimeError: cannot reach rabbit://inspector:***@127.0.0.1/")


def test_the_error_summary_shim_fits_oslo_log():
    """logs.error_summary is oslo.log's private formatters._get_error_summary(record):
    this fails if oslo.log renames it, changes its parameters or what it returns."""
    private = getattr(oslo_formatters, "_get_error_summary", None)
    assert callable(private), "oslo.log lost _get_error_summary: see inspector/api/logs.py"
    assert list(inspect.signature(private).parameters) == ["record"]

    def record(level: int) -> logging.LogRecord:
        return LOG.makeRecord(LOG.name, level, __file__, 1, "message", (), None)

    try:
        raise RuntimeError("the one being handled")
    except RuntimeError:
        assert logs.error_summary(record(logging.WARNING)) == (
            "RuntimeError: the one being handled"
        )
        assert logs.error_summary(record(logging.INFO)) == ""
    assert not logs.error_summary(record(logging.ERROR))  # nothing being handled


def test_use_json_writes_a_json_document_a_line_masked(tmp_path):
    conf = load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\nuse_json = true\n")
    setup_logging(conf)
    log_secrets()
    flush()
    text = (tmp_path / "inspector.log").read_text()
    assert SECRET not in text
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["levelname"] for r in records] == ["INFO", "ERROR", "WARNING"]
    assert records[0]["message"] == "driver_info {'ipmi_password': '***'}"
    assert {r["context"]["global_request_id"] for r in records} == {GLOBAL_ID}
    assert {r["context"]["request_id"] for r in records} == {"req-own"}
    traceback = records[1]["traceback"]  # a list of lines before oslo.log 8
    assert "rabbit://inspector:***@" in "\n".join(
        traceback if isinstance(traceback, list) else [traceback]
    )
    assert records[2]["error_summary"].endswith("rabbit://inspector:***@127.0.0.1/")


def test_default_log_levels(tmp_path):
    conf = load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n")
    setup_logging(conf)
    # Ours, besides oslo.log's: the libraries that talk too much at INFO.
    for name in ("cheroot", "urllib3", "alembic.runtime.migration", "amqp"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING, name
    assert logging.getLogger("inspector.worker").getEffectiveLevel() == logging.INFO
    conf = load(
        tmp_path,
        f"""
        [DEFAULT]
        log_file = {tmp_path / "inspector.log"}
        default_log_levels = inspector.worker=ERROR,cheroot=DEBUG
        """,
    )
    setup_logging(conf)
    logging.getLogger("inspector.worker.pool").warning("not shown")
    logging.getLogger("inspector.worker.pool").error("shown")
    flush()
    text = (tmp_path / "inspector.log").read_text()
    assert "shown" in text and "not shown" not in text
    assert logging.getLogger("cheroot").getEffectiveLevel() == logging.DEBUG


def test_debug_from_the_command_line(tmp_path):
    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n")
    conf = config.load(["--config-file", str(path), "--debug"])
    setup_logging(conf)
    LOG.debug("a debug line")
    flush()
    assert "a debug line" in (tmp_path / "inspector.log").read_text()


def test_a_log_config_append_files_handlers_are_masked(tmp_path):
    """The operator's own logging configuration: its handlers, on the root logger and on
    any other, mask too, and lines show the request context."""
    root_log, api_log = tmp_path / "root.log", tmp_path / "api.log"
    logging_conf = tmp_path / "logging.conf"
    logging_conf.write_text(
        textwrap.dedent(
            f"""
            [loggers]
            keys = root, test

            [handlers]
            keys = plain, context

            [formatters]
            keys = plain, context

            [logger_root]
            level = INFO
            handlers = plain

            [logger_test]
            level = INFO
            handlers = context
            qualname = inspector.test_logging

            [handler_plain]
            class = FileHandler
            formatter = plain
            args = ({str(root_log)!r},)

            [handler_context]
            class = FileHandler
            formatter = context
            args = ({str(api_log)!r},)

            [formatter_plain]
            format = %(levelname)s %(name)s %(message)s

            [formatter_context]
            class = oslo_log.formatters.ContextFormatter
            """
        )
    )
    conf = load(tmp_path, f"[DEFAULT]\nlog_config_append = {logging_conf}\n")
    setup_logging(conf)
    log_secrets()
    for logger in (logging.getLogger(), LOG):
        for handler in logger.handlers:
            handler.flush()
    plain, context = root_log.read_text(), api_log.read_text()
    assert "ipmi_password': '***'" in plain and "ipmi_password': '***'" in context
    assert "rabbit://inspector:***@" in plain and "rabbit://inspector:***@" in context
    assert SECRET not in plain and SECRET not in context
    assert f"[{GLOBAL_ID} req-own " in context


def test_a_log_config_append_that_does_not_load_is_a_config_error(tmp_path):
    broken = tmp_path / "logging.conf"
    broken.write_text("[loggers]\nkeys = root\n")
    conf = load(tmp_path, f"[DEFAULT]\nlog_config_append = {broken}\n")
    with pytest.raises(ConfigError, match="cannot set up logging"):
        setup_logging(conf)


def test_an_unknown_level_is_a_config_error(tmp_path):
    conf = load(tmp_path, "[DEFAULT]\ndefault_log_levels = inspector=LOUD\n")
    with pytest.raises(ConfigError, match="LOUD"):
        setup_logging(conf)


def test_the_journal_gets_masked_lines(tmp_path, monkeypatch):
    sent = []
    journal = types.SimpleNamespace(send=lambda message, **extras: sent.append((message, extras)))
    monkeypatch.setattr(oslo_handlers, "journal", journal)
    conf = load(tmp_path, "[DEFAULT]\nuse_journal = true\n")
    setup_logging(conf)
    log_secrets()
    assert len(sent) == 3
    assert SECRET not in repr(sent)
    assert sent[0][1]["REQUEST_ID"] == "req-own"
    assert "rabbit://inspector:***@" in sent[1][1]["EXCEPTION_INFO"]


def test_syslog_gets_masked_lines(tmp_path, monkeypatch):
    sent = []
    monkeypatch.setattr(syslog, "openlog", lambda *args: None)
    monkeypatch.setattr(syslog, "syslog", lambda priority, message: sent.append(message))
    conf = load(tmp_path, "[DEFAULT]\nuse_syslog = true\nuse_stderr = true\n")
    setup_logging(conf)
    log_secrets()
    assert len(sent) == 3
    assert SECRET not in "\n".join(sent)
    assert "rabbit://inspector:***@" in sent[1]


def test_without_the_journal_bindings_use_journal_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setattr(oslo_handlers, "journal", None)
    conf = load(tmp_path, "[DEFAULT]\nuse_journal = true\n")
    with pytest.raises(ConfigError, match="Systemd bindings"):
        setup_logging(conf)


def test_a_command_logs_warnings_to_standard_error_never_to_the_file(tmp_path, capfd):
    conf = load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n")
    setup_logging(conf, command=True)
    LOG.info("an information")
    LOG.warning("a warning with password=%s", SECRET)
    flush()
    out, err = capfd.readouterr()
    assert out == ""
    assert "a warning with password=***" in err and "an information" not in err
    assert not (tmp_path / "inspector.log").exists()


def test_config_check_reads_ironic_inspectors_logging_options(tmp_path, capfd):
    path = tmp_path / "inspector.conf"
    path.write_text(
        textwrap.dedent(
            f"""
            [DEFAULT]
            debug = true
            log_dir = {tmp_path}
            log_file = ironic-inspector.log
            use_stderr = false
            use_json = false
            use_syslog = false
            syslog_log_facility = LOG_LOCAL0
            logging_context_format_string = %(asctime)s %(levelname)s [%(request_id)s] %(message)s
            default_log_levels = amqp=WARN,sqlalchemy=WARN,keystonemiddleware=WARN
            """
        )
    )
    assert config_cmd.run_check(None, ["--config-file", str(path)]) == 0
    assert "configuration is valid" in capfd.readouterr().out
    assert not (tmp_path / "ironic-inspector.log").exists()
    # ironic-inspector's own file: its log_dir (/var/log/ironic-inspector) need not exist.
    assert config_cmd.run_check(None, ["--config-file", str(IRONIC_INSPECTOR_CONF)]) == 0


@pytest.mark.parametrize("option", ["use_json", "debug", "use_journal"])
def test_an_invalid_logging_option_is_named(tmp_path, capfd, option):
    """oslo.config's own check of a command-line option's value in a file writes to
    standard error and exits: a ConfigError naming the option instead."""
    with pytest.raises(ConfigError, match=rf"\[DEFAULT\] {option}: 'sometimes' is not"):
        load(tmp_path, f"[DEFAULT]\n{option} = sometimes\n")
    assert "sometimes" not in capfd.readouterr().err


def test_uncaught_exceptions_of_the_main_thread_are_logged_masked(tmp_path):
    conf = load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n")
    setup_logging(conf)
    try:
        raise RuntimeError(f"password={SECRET}")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    flush()
    text = (tmp_path / "inspector.log").read_text()
    assert "CRITICAL inspector " in text and "Unhandled error" in text
    assert SECRET not in text and "password=***" in text


def test_an_exception_escaping_a_thread_is_logged_under_what_failed(tmp_path):
    setup_logging(load(tmp_path, f"[DEFAULT]\nlog_file = {tmp_path / 'inspector.log'}\n"))
    ended = Leadership("periodic", "me", 1, math.inf, time.monotonic())
    ended.end("stopping")
    for name, target in (("fenced", ended.check), ("doomed", lambda: 1 / 0)):
        thread = threading.Thread(target=target, name=name)
        thread.start()
        thread.join()
    flush()
    text = (tmp_path / "inspector.log").read_text()
    assert "ERROR inspector.coordination.election [-] Uncaught exception in fenced" in text
    assert "ERROR inspector [-] Uncaught exception in doomed" in text  # none of ours
    assert "inspector.api.logs" not in text
