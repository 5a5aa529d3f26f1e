"""[database] options: the store's connection URL, retry policy and connection pool
(oslo.db's names and defaults; oslo.db itself is not used), and the bounds on how long a
database may keep a thread waiting (our own names: oslo.db has none)."""

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
#: Seconds a thread waits for a connection of a full pool (SQLAlchemy's default is 30).
POOL_TIMEOUT = 2
#: Seconds to wait for the server to accept a connection (libpq counts at least 2).
CONNECT_TIMEOUT = 2
#: Seconds a connection may go unanswered (data unacknowledged, keepalive probes).
SOCKET_TIMEOUT = 3.0
#: Seconds one statement may run on the server.
STATEMENT_TIMEOUT = 3.0
#: Seconds a statement may wait for a lock: below STATEMENT_TIMEOUT, so that a lock
#: wait fails as one.
LOCK_TIMEOUT = 2.0
#: Seconds a PostgreSQL session may sit idle inside a transaction.
IDLE_IN_TRANSACTION_TIMEOUT = 10.0

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
        default=POOL_TIMEOUT,
        min=0,
        deprecated_opts=[cfg.DeprecatedOpt("sqlalchemy_pool_timeout", group="DATABASE")],
        help="PostgreSQL, MySQL/MariaDB: seconds a thread waits for a connection of a "
        "full pool before the database counts as unavailable (503 in the API, a retry "
        "in a worker). oslo.db leaves it to SQLAlchemy (30 s): longer than an API "
        "answer may take.",
    ),
    cfg.IntOpt(
        "connect_timeout",
        default=CONNECT_TIMEOUT,
        min=1,
        help="PostgreSQL, MySQL/MariaDB: seconds to wait for the server to accept a new "
        "connection (libpq waits at least 2). A `connect_timeout` in the connection "
        "URL wins.",
    ),
    cfg.FloatOpt(
        "socket_timeout",
        default=SOCKET_TIMEOUT,
        min=0.5,
        help="PostgreSQL, MySQL/MariaDB: seconds a connection may go without the server "
        "acknowledging what was sent or answering TCP keepalive probes (sent after 1 s "
        "of silence) before it counts as lost: a server that stopped answering (a "
        "network that drops packets, a frozen host) fails the statement within this "
        "instead of hanging its thread. The TCP user timeout and keepalives of the "
        "connection (libpq's `tcp_user_timeout`, `keepalives*`, which the connection URL "
        "may set instead; PyMySQL's socket, whose `write_timeout` is this and "
        "`read_timeout` this plus statement_timeout).",
    ),
    cfg.FloatOpt(
        "statement_timeout",
        default=STATEMENT_TIMEOUT,
        min=0,
        help="PostgreSQL, MySQL/MariaDB: seconds one statement may run before the server "
        "cancels it (0: no limit). PostgreSQL's `statement_timeout`; MariaDB's "
        "`max_statement_time`; MySQL's `max_execution_time` (SELECT only). Every "
        "statement of the service is small: one that runs longer waits on something "
        "wrong. `inspector db upgrade` and the import of an ironic-inspector database "
        "run without it.",
    ),
    cfg.FloatOpt(
        "lock_timeout",
        default=LOCK_TIMEOUT,
        min=0,
        help="PostgreSQL, MySQL/MariaDB: seconds a statement may wait for a lock held by "
        "another transaction before it fails (0: no limit). PostgreSQL's "
        "`lock_timeout`; MySQL's and MariaDB's `innodb_lock_wait_timeout` and "
        "`lock_wait_timeout` (whole seconds, at least 1).",
    ),
    cfg.FloatOpt(
        "idle_in_transaction_timeout",
        default=IDLE_IN_TRANSACTION_TIMEOUT,
        min=0,
        help="PostgreSQL: seconds a session may sit idle inside a transaction before the "
        "server ends it, releasing its locks (0: no limit): only a frozen process "
        "(SIGSTOP, a stalled VM) gets there, and without it would block every process "
        "that needs the rows it locked until it wakes. PostgreSQL's "
        "`idle_in_transaction_session_timeout`.",
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
