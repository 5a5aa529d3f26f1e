"""The peer: the real ironic-inspector 12.5.0, run standalone as an operator runs it.

Owns its virtualenv check (scripts/ironic-inspector), its database, its configuration
and its process; it does not drive introspections (the scenarios do) nor count calls.

Configuration: standalone (API and conductor in one process), noauth, the fake message
transport, `[processing] store_data = database` with the default hooks and power off,
`[pxe_filter] driver = noop` (no firewall: ours runs without one in the benchmark too),
`introspection_delay = 0` (the default 5 s would serialise a batch into a queue of
sleeps). Everything else keeps 12.5.0's defaults, including its periodic tasks: every
`clean_up_period` (60 s) it lists *all* Ironic nodes (`GET /v1/nodes?fields=uuid`, no
limit) to forget deleted ones. That is a real cost of the peer that an operator pays,
so it is left on; a counting proxy in front of Ironic sees it as a list-all call.
"""

import contextlib
import dataclasses
import os
import pathlib
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import requests
import sqlalchemy
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from bench.fleet import procstat

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Installs and runs ironic-inspector 12.5.0 in its own virtualenv under .services.
SCRIPT = ROOT / "scripts" / "ironic-inspector"
#: Seconds the peer gets to answer GET / after it was started, and to leave on SIGTERM.
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
#: Seconds a pip install of the peer may take (cold cache: about two minutes here).
INSTALL_TIMEOUT = 900.0


class PeerError(RuntimeError):
    """The peer could not be installed, configured or started."""


@dataclasses.dataclass
class Peer:
    """A running ironic-inspector: its API URL, its process and its log."""

    url: str
    process: subprocess.Popen
    log: pathlib.Path

    def pids(self) -> list[int]:
        """The process and all its descendants (for CPU accounting); empty once it left."""
        if not self.alive():
            return []
        children: dict[int, list[int]] = {}
        for pid, ppid in _parent_links():
            children.setdefault(ppid, []).append(pid)
        found, pending = [], [self.process.pid]
        while pending:
            pid = pending.pop()
            found.append(pid)
            pending.extend(children.get(pid, []))
        return found

    def alive(self) -> bool:
        return self.process.poll() is None


def _parent_links() -> Iterator[tuple[int, int]]:
    """(pid, parent pid) of every process, from /proc/*/stat."""
    for pid in procstat.pids():
        stat = procstat.fields(pid)
        if stat is not None:  # else the process left while we looked
            yield pid, int(stat[1])


def ensure_installed() -> None:
    """ironic-inspector 12.5.0 in its virtualenv, installed now if it is not yet."""
    if not os.access(SCRIPT, os.X_OK):
        raise PeerError(f"{SCRIPT} is missing or not executable")
    if subprocess.run([SCRIPT, "installed"], check=False).returncode == 0:
        return
    try:
        done = subprocess.run(
            [SCRIPT, "install"],
            check=False,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired as error:
        raise PeerError(f"{SCRIPT} install took over {INSTALL_TIMEOUT:.0f} s") from error
    if done.returncode != 0:
        raise PeerError(
            f"{SCRIPT} install failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
        )


def free_port() -> int:
    """A TCP port nothing listens on at the moment (on 127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def render_config(sections: dict[str, dict[str, Any]]) -> str:
    """An oslo.config INI file: booleans as true/false."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for name, value in options.items():
            shown = ("true" if value else "false") if isinstance(value, bool) else value
            lines.append(f"{name} = {shown}")
        lines.append("")
    return "\n".join(lines)


def configuration(
    *,
    port: int,
    database_url: str,
    ironic_url: str,
    log: pathlib.Path,
    max_concurrency: int,
    timeout: int,
) -> dict[str, dict[str, Any]]:
    """The peer's options, section by section (see the module docstring for why)."""
    return {
        "DEFAULT": {
            "auth_strategy": "noauth",
            "standalone": True,
            "transport_url": "fake://",
            "listen_address": "127.0.0.1",
            "listen_port": port,
            "introspection_delay": 0,
            "max_concurrency": max_concurrency,
            "timeout": timeout,
            "log_file": log,
        },
        "database": {"connection": database_url},
        "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
        "processing": {"store_data": "database"},
        "pxe_filter": {"driver": "noop"},
    }


@contextlib.contextmanager
def database(admin_database_url: str) -> Iterator[str]:
    """A new PostgreSQL database, as the psycopg2 URL the peer uses; dropped after."""
    admin_url = make_url(admin_database_url)
    admin = sqlalchemy.create_engine(
        admin_url,
        poolclass=NullPool,
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": 5},
    )
    name = f"fleet_peer_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        url = admin_url.set(drivername="postgresql+psycopg2", database=name)
        try:
            yield url.render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                # FORCE: the peer may have been killed with connections open.
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _dbsync(config: pathlib.Path) -> None:
    done = subprocess.run(
        [SCRIPT, "dbsync", "--config-file", str(config), "upgrade"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise PeerError(f"ironic-inspector-dbsync upgrade failed: {done.stderr[-2000:]}")


def _wait_answering(peer: Peer) -> None:
    """Return once GET / answers; PeerError if the process leaves or START_TIMEOUT ends."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{peer.url}/", timeout=2).ok:
                return
        # Waiting on the process doubles as the pause between two polls.
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = peer.process.wait(timeout=0.2)
            raise PeerError(f"ironic-inspector exited ({code}); see {peer.log}:\n{_tail(peer)}")
    raise PeerError(f"ironic-inspector did not answer in {START_TIMEOUT:.0f} s; see {peer.log}")


def _tail(peer: Peer) -> str:
    return peer.log.read_text(errors="replace")[-3000:] if peer.log.exists() else ""


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the process group, SIGKILL after STOP_TIMEOUT."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)


@contextlib.contextmanager
def running(
    workdir: pathlib.Path,
    *,
    ironic_url: str,
    admin_database_url: str,
    max_concurrency: int = 1000,
    timeout: int = 3600,
) -> Iterator[Peer]:
    """A fresh database (CREATE DATABASE on the admin URL; dropped at the end), a config,
    dbsync upgrade, the process started and answering GET /; on exit SIGTERM to its
    process group, SIGKILL after a deadline, and the database dropped."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "ironic-inspector.log"
    config = workdir / "ironic-inspector.conf"
    port = free_port()
    with database(admin_database_url) as database_url:
        sections = configuration(
            port=port,
            database_url=database_url,
            ironic_url=ironic_url,
            log=log,
            max_concurrency=max_concurrency,
            timeout=timeout,
        )
        config.write_text(render_config(sections))
        _dbsync(config)
        # Its own stdout/stderr (tracebacks before logging is set up) go to the same log,
        # appended like oslo.log's lines.
        with open(log, "ab") as output:
            process = subprocess.Popen(
                [SCRIPT, "run", "--config-file", str(config)],
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        peer = Peer(url=f"http://127.0.0.1:{port}", process=process, log=log)
        try:
            _wait_answering(peer)
            yield peer
        finally:
            _stop(process)
