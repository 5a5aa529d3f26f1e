"""Logging set-up of the service processes (stdlib logging, one format, every record
through inspector.redaction's filter)."""

import logging
import sys
import threading

from inspector import redaction


def setup_logging(debug: bool, log_file: str | None = None) -> None:
    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    redaction.install(root)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("cheroot", "urllib3", "alembic.runtime.migration"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # An exception that escapes a thread goes through the log (and its redaction), not
    # straight to stderr as Python prints it.
    threading.excepthook = _log_thread_exception


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if issubclass(args.exc_type, SystemExit):
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger(__name__).error(
        "Uncaught exception in %s",
        name,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )
