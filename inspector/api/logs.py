"""Logging set-up of every command: oslo.log from the [DEFAULT] logging options
(inspector.conf.log), then, on every handler it set up (a log_config_append file's
too), inspector.redaction's filter, the request context (inspector.request_context) and
formatters that mask what they format themselves; an exception that escapes a thread is
logged."""

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from oslo_config import cfg
from oslo_log import formatters
from oslo_log import log as oslo_log

from inspector import __version__, redaction, request_context
from inspector.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import OptExcInfo

#: oslo.log's product name: the logger of uncaught exceptions, the formatters' project.
PRODUCT = "inspector"


def setup_logging(conf: cfg.ConfigOpts, *, command: bool = False) -> None:
    """Log as conf says. A `command` (db, config check, status, firewall close) writes
    its standard output for the operator: its lines go to standard error, never to the
    service's log file (which another user may own), and only from WARNING up unless
    debug is on; a log_config_append file is followed as it is.

    Raises ConfigError when oslo.log cannot set up what conf asks (a log_config_append
    that does not load, a log file that cannot be opened, use_journal without the
    systemd bindings, an unknown level in default_log_levels)."""
    if command:
        conf.set_override("use_stderr", True)
        conf.set_override("log_file", None)
        conf.set_override("log_dir", None)  # alone, it names a file too
    for handler in logging.getLogger().handlers:
        handler.close()  # oslo.log drops them, without closing a file
    try:
        oslo_log.setup(conf, PRODUCT, __version__)
    except (oslo_log.LogConfigError, OSError, RuntimeError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot set up logging: {exc}") from exc
    if command and not conf.debug:
        logging.getLogger().setLevel(logging.WARNING)
    for logger in _loggers():
        redaction.install(logger)
        request_context.install(logger)
        for handler in logger.handlers:
            _redact_formatter(handler)
    # An exception that escapes a thread goes through the log (and its redaction), not
    # straight to stderr as Python prints it.
    threading.excepthook = _log_thread_exception


def _loggers() -> list[logging.Logger]:
    """The root logger and every other one (a log_config_append file may give any of
    them handlers)."""
    others = logging.Logger.manager.loggerDict.values()
    return [logging.getLogger(), *(x for x in others if isinstance(x, logging.Logger))]


class _Redacting:
    """For oslo.log's formatters: they format the exception again from the exception
    itself, not from the text the filter masked, and add the exception being handled
    (even when the call did not pass it) to a WARNING or worse line as its `error
    summary`. Both are masked here."""

    def formatException(self, ei: "OptExcInfo", *args: Any, **kwargs: Any) -> str | list[str]:
        # A mixin: the oslo.log formatter it is mixed into has formatException and format.
        text = super().formatException(ei, *args, **kwargs)  # type: ignore[misc]
        if isinstance(text, list):  # oslo.log before 8 (JSONFormatter): the lines
            return [redaction.mask_traceback(line) for line in text]
        return redaction.mask_traceback(text)

    def format(self, record: logging.LogRecord) -> str | dict[str, Any]:
        formatted = super().format(record)  # type: ignore[misc]  # as above
        summary = error_summary(record)  # the one oslo.log just added
        if not summary:
            return formatted
        masked = redaction.mask_traceback(summary)
        if masked == summary:
            return formatted
        if isinstance(formatted, dict):  # FluentFormatter's
            formatted["error_summary"] = masked
            return formatted
        if isinstance(self, formatters.JSONFormatter):
            return formatted.replace(json.dumps(summary)[1:-1], json.dumps(masked)[1:-1])
        return formatted.replace(summary, masked)


def error_summary(record: logging.LogRecord) -> str:
    """The `error summary` oslo.log's formatters add to record's line: the exception
    being handled (or the record's own), for a WARNING or worse; "" otherwise.

    oslo.log's `formatters._get_error_summary(record)` is private: this is the one
    place that uses it, and tests/unit/test_logging.py fails if oslo.log changes it."""
    return formatters._get_error_summary(record)


#: The formatters that format exceptions themselves.
_OSLO_FORMATTERS = (
    formatters.ContextFormatter,
    formatters.JSONFormatter,
    formatters.FluentFormatter,
)


def _redact_formatter(handler: logging.Handler) -> None:
    """Make an oslo.log formatter (or a subclass of one) of handler a masking one."""
    formatter = handler.formatter
    if isinstance(formatter, _OSLO_FORMATTERS) and not isinstance(formatter, _Redacting):
        kind = type(formatter)
        formatter.__class__ = type(f"Redacting{kind.__name__}", (_Redacting, kind), {})


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    """Log what escaped a thread under the logger of the innermost of our modules it went
    through (what failed), else under the product's."""
    if issubclass(args.exc_type, SystemExit):
        return
    name = args.thread.name if args.thread is not None else "a thread"
    failed, frame = PRODUCT, args.exc_traceback
    while frame is not None:
        module = frame.tb_frame.f_globals.get("__name__", "")
        if module.startswith(PRODUCT + "."):
            failed = module
        frame = frame.tb_next
    logging.getLogger(failed).error(
        "Uncaught exception in %s",
        name,
        # logging takes a None value in the tuple too (ExceptHookArgs allows one).
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
    )
