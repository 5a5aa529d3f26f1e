"""A process frozen inside a transaction (SIGSTOP, a stalled VM) does not hold its row
locks for ever on PostgreSQL: the server ends its session after
[database] idle_in_transaction_timeout, the others go on, and the frozen one's transaction fails
when it wakes."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import sqlalchemy
from sqlalchemy import text

from inspector.conf import database as database_opts
from inspector.store import create_engine
from inspector.store.bounds import Bounds

HOLDER = textwrap.dedent(
    """
    import sys
    from sqlalchemy import text
    from inspector.store import create_engine

    engine = create_engine(sys.argv[1])
    with engine.connect() as connection:
        transaction = connection.begin()
        connection.execute(text("SELECT value FROM marker WHERE id = 1 FOR UPDATE"))
        print("locked", flush=True)
        sys.stdin.readline()  # frozen here by the test, then woken
        try:
            connection.execute(text("UPDATE marker SET value = 'stale' WHERE id = 1"))
            transaction.commit()
            print("committed", flush=True)
        except Exception as error:
            print("fenced", type(error).__name__, flush=True)
            connection.invalidate()  # the server ended it: no rollback on the way out
    """
)


def _marker_table(engine: sqlalchemy.Engine) -> None:
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE marker (id INTEGER PRIMARY KEY, value TEXT)"))
        connection.execute(text("INSERT INTO marker VALUES (1, 'first')"))


def test_server_sessions_get_the_idle_in_transaction_timeout(postgresql_url):
    engine = create_engine(postgresql_url)
    try:
        with engine.connect() as connection:
            value = connection.execute(text("SHOW idle_in_transaction_session_timeout"))
            assert value.scalar() == f"{database_opts.IDLE_IN_TRANSACTION_TIMEOUT:.0f}s"
    finally:
        engine.dispose()


def test_url_options_are_kept(postgresql_url):
    url = sqlalchemy.make_url(postgresql_url).update_query_dict(
        {"options": "-c idle_in_transaction_session_timeout=1500"}
    )
    engine = create_engine(url.render_as_string(hide_password=False))
    try:
        with engine.connect() as connection:
            value = connection.execute(text("SHOW idle_in_transaction_session_timeout"))
            assert value.scalar() == "1500ms"
    finally:
        engine.dispose()


def test_a_frozen_lock_holder_is_cut_off_and_fails_when_it_wakes(postgresql_url):
    # The waiter's statement waits longer than [database] statement_timeout here.
    engine = create_engine(postgresql_url, bounds=Bounds().unlimited_statements())
    _marker_table(engine)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, postgresql_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        os.kill(holder.pid, signal.SIGSTOP)
        bound = database_opts.IDLE_IN_TRANSACTION_TIMEOUT
        started = time.monotonic()
        with engine.begin() as connection:  # blocks on the frozen holder's row lock
            # Without the timeout it would block for ever: fail instead.
            connection.execute(text(f"SET LOCAL lock_timeout = '{bound + 5:.0f}s'"))
            connection.execute(text("UPDATE marker SET value = 'second' WHERE id = 1"))
        waited = time.monotonic() - started
        assert bound * 0.9 <= waited < bound + 5, waited
        os.kill(holder.pid, signal.SIGCONT)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().startswith("fenced"), "the woken holder committed"
        assert holder.wait(timeout=30) == 0
        with engine.connect() as connection:
            value = connection.execute(text("SELECT value FROM marker WHERE id = 1"))
            assert value.scalar() == "second"
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGCONT)
            holder.kill()
            holder.wait(timeout=30)
        holder.stdin.close()
        holder.stdout.close()
        engine.dispose()
