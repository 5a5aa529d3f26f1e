"""Logging set-up of the service processes (stdlib logging, one format, every record
through inspector.redaction's filter)."""

import logging
import sys

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
