"""[database] options: the store's connection URL and retry policy (oslo.db's names)."""

from oslo_config import cfg

GROUP = "database"

OPTS = [
    cfg.StrOpt(
        "connection",
        default="",
        secret=True,
        help="SQLAlchemy URL of the store, e.g. postgresql+psycopg://user:pass@host/db "
        "or mysql+pymysql://user:pass@host/db. Empty: SQLite under state_path "
        "(embedded, single host).",
    ),
    cfg.IntOpt(
        "max_retries",
        default=10,
        min=-1,
        help="Connection attempts to the database before the process gives up; "
        "-1 retries forever (oslo.db's meaning, kept for existing files).",
    ),
    cfg.FloatOpt(
        "retry_interval",
        default=2.0,
        min=0.001,
        help="Seconds between two connection attempts to the database.",
    ),
]
