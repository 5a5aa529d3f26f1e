"""[database] options: the store's connection URL, retry policy and connection pool
(oslo.db's names and defaults; oslo.db itself is not used)."""

from oslo_config import cfg

GROUP = "database"

#: Connections each pool keeps: at least the busy threads of a process ([api] threads
#: 16 over two pools, the worker pool), since a connection returned beyond the size is
#: closed and a burst would reconnect (oslo.db's default is 5).
MAX_POOL_SIZE = 10
#: Opened beyond MAX_POOL_SIZE at peaks, closed when returned (oslo.db's: 50).
MAX_OVERFLOW = 20
#: oslo.db's default.
CONNECTION_RECYCLE_TIME = 3600

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
    cfg.IntOpt(
        "max_pool_size",
        default=MAX_POOL_SIZE,
        min=0,
        help="PostgreSQL, MySQL/MariaDB: connections each pool of a process keeps open "
        "once they were needed (0: no limit). A process has two pools (transactions, "
        "and single statements in autocommit), each with this size. Connections are "
        "opened only when a thread needs one; one returned beyond this size is closed, "
        "so a pool smaller than the busy threads of a process ([api] threads, [worker] "
        "pool_size) reconnects during bursts. SQLite keeps SQLAlchemy's pool.",
    ),
    cfg.IntOpt(
        "max_overflow",
        default=MAX_OVERFLOW,
        min=-1,
        deprecated_opts=[
            cfg.DeprecatedOpt("sql_max_overflow", group="DEFAULT"),
            cfg.DeprecatedOpt("sqlalchemy_max_overflow", group="DATABASE"),
        ],
        help="PostgreSQL, MySQL/MariaDB: connections a pool may open beyond "
        "max_pool_size at peaks, closed when returned (-1: no limit). At most "
        "max_pool_size + max_overflow connections per pool.",
    ),
    cfg.IntOpt(
        "pool_timeout",
        min=0,
        deprecated_opts=[cfg.DeprecatedOpt("sqlalchemy_pool_timeout", group="DATABASE")],
        help="PostgreSQL, MySQL/MariaDB: seconds a thread waits for a connection of a "
        "full pool before the database counts as unavailable (503 in the API, a retry "
        "in a worker). Unset: SQLAlchemy's 30.",
    ),
    cfg.IntOpt(
        "connection_recycle_time",
        default=CONNECTION_RECYCLE_TIME,
        min=-1,
        help="PostgreSQL, MySQL/MariaDB: seconds after which a pooled connection is "
        "replaced by a new one when it is next taken from the pool (-1: never). Keep it "
        "below the server's (or a proxy's) idle timeout, such as MySQL's wait_timeout.",
    ),
]
