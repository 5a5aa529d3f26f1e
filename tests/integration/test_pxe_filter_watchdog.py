"""The dnsmasq driver never leaves two hosts answering when the open host dies or freezes.

Three PXE hosts in network namespaces (tests/integration/firewall_lab.py), each with a
real dnsmasq reading its own hostsdir and an `inspector pxe-filter` (dnsmasq driver,
whitelist_source = ironic on the test Ironic, unknown MACs answered by the open host,
one Redis DLM). The open host is killed with SIGKILL, or frozen with SIGSTOP, while four
CPU-bound processes keep both CPUs busy. Every 50 ms the test reads the three hostsdirs
as dnsmasq reads them and asserts that never two answer; a node namespace sends a
DHCPDISCOVER every 50 ms too, and no DISCOVER is ever offered an address by two hosts.

systemd is played by `Unit`, one per host, as it runs etc/inspector/inspector-pxe-filter.service
with a drop-in setting WatchdogSec= to the test's [pxe_filter] watchdog_timeout:

- it binds a datagram socket and starts the filter with NOTIFY_SOCKET naming it and
  WATCHDOG_USEC (as systemd does for Type=notify with WatchdogSec=), at the unit's Nice=;
- it reads READY=1, WATCHDOG=1 and STOPPING=1 from the socket; once READY=1 came, a
  WatchdogSec without WATCHDOG=1 gets the process the unit's WatchdogSignal= (SIGKILL),
  as systemd's watchdog does (a SIGKILL ends a stopped process too);
- it sees the process die within 50 ms (it is its parent, as systemd is), and then runs
  the unit's ExecStopPost=, `inspector firewall close` with that host's configuration,
  at the same Nice=.

It does not restart the process (Restart=), which the test does not need.
"""

import contextlib
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.integration.cluster import INSPECTOR, ROOT, coordination_url, render_config, wait_for
from tests.integration.firewall_lab import Host, Lab, worker_options

pytestmark = pytest.mark.integration

UNIT = ROOT / "etc" / "inspector" / "inspector-pxe-filter.service"
LEASE = 3
#: WatchdogSec= (and [pxe_filter] watchdog_timeout) of the test's hosts.
WATCHDOG = 2.0
#: [pxe_filter] close_timeout: what `inspector firewall close` takes here on a busy host.
CLOSE = 8.0
#: What a new leader waits after taking the lease (takeover.delay: + the refresh).
DELAY = WATCHDOG + CLOSE + 0.5
#: The DHCP client of the DHCP sampler: in no list, so the open host answers it.
SAMPLER_MAC = "02:00:5e:10:00:02"
#: CPU-bound processes beside the hosts.
HOGS = 4


def unit_setting(name: str, default: str) -> str:
    match = re.search(rf"^{name}=(.*)$", UNIT.read_text(), re.M)
    return match[1].strip() if match else default


class Unit:
    """systemd running one host's `inspector pxe-filter` (see the module's docstring)."""

    def __init__(self, tmp_path: pathlib.Path, host: Host, config: pathlib.Path) -> None:
        self.host, self.config = host, config
        self.nice = int(unit_setting("Nice", "0"))
        assert unit_setting("WatchdogSignal", "SIGABRT") == "SIGKILL"
        self.log_path = tmp_path / f"pxe-filter-{host.index}.log"
        self.socket_path = str(tmp_path / f"notify-{host.index}")
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(self.socket_path)
        self.socket.settimeout(0.05)
        self.ready_at: float | None = None
        self.watchdog_fired_at: float | None = None
        self.died_at: float | None = None
        self.closed_at: float | None = None
        self.close_output = ""
        self.process: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._supervise, daemon=True)

    def _command(self, *argv: str) -> list[str]:
        return ["nice", "-n", str(self.nice), *INSPECTOR, *argv, "--config-file", str(self.config)]

    def start(self) -> None:
        env = {
            **os.environ,
            "NOTIFY_SOCKET": self.socket_path,
            "WATCHDOG_USEC": str(int(WATCHDOG * 1e6)),
        }
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                self._command("pxe-filter"),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self._thread.start()

    def _supervise(self) -> None:
        process = self.process
        assert process is not None
        last = stopping = None
        while process.poll() is None:
            with contextlib.suppress(TimeoutError):
                for line in self.socket.recv(4096).decode().splitlines():
                    now = time.monotonic()
                    if line == "READY=1" and self.ready_at is None:
                        self.ready_at = last = now
                    elif line == "WATCHDOG=1":
                        last = now
                    elif line == "STOPPING=1":
                        stopping = now
            watched = last is not None and stopping is None and self.watchdog_fired_at is None
            if watched and time.monotonic() - last > WATCHDOG:
                self.watchdog_fired_at = time.monotonic()
                process.send_signal(signal.SIGKILL)
        self.died_at = time.monotonic()
        close = subprocess.run(
            self._command("firewall", "close"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        self.close_output = close.stdout + close.stderr
        self.closed_at = time.monotonic()

    def terminate(self) -> None:
        """systemctl stop: SIGTERM (SIGCONT first, should it be stopped)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)

    def join(self) -> None:
        """Until the process stopped and ExecStopPost= ran."""
        if self._thread.ident is not None:
            self._thread.join(60)
        self.socket.close()

    def log(self) -> str:
        return (
            f"--- host{self.host.index}\n{self.log_path.read_text()[-3000:]}\n{self.close_output}"
        )


class Hostsdirs:
    """Reads the hosts' hostsdirs every 50 ms, as dnsmasq does: files whose name starts
    with a dot are skipped (the driver's temporary files); each other file holds one
    record, `<mac>` or `*:*:*:*:*:*` (answered) or the same with `,ignore`. A hostsdir
    answers when any of its records is answered: the wildcard answers every MAC without
    a file of its own, a MAC file that MAC. A file is read again only when it changed
    (the driver renames a new one into place: another inode, time or size)."""

    def __init__(self, hosts: list[Host]) -> None:
        self.hosts = hosts
        self.samples: list[tuple[float, tuple[int, ...]]] = []
        self._records: dict[tuple, bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def answering(self, host: Host) -> bool:
        assert host.hostsdir is not None
        answered = False
        for entry in os.scandir(host.hostsdir):
            if entry.name.startswith("."):
                continue
            with contextlib.suppress(FileNotFoundError):
                stat = entry.stat()
            key = (host.index, entry.name, stat.st_ino, stat.st_mtime_ns, stat.st_size)
            if key not in self._records:
                with contextlib.suppress(FileNotFoundError):
                    text = pathlib.Path(entry.path).read_text().strip()
                    self._records[key] = bool(text) and not text.endswith(",ignore")
            answered = answered or self._records.get(key, False)
        return answered

    def filtering(self) -> bool:
        return all((h.hostsdir / "unknown_hosts_filter").exists() for h in self.hosts)

    def sample(self) -> tuple[int, ...]:
        return tuple(host.index for host in self.hosts if self.answering(host))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.samples.append((time.monotonic(), self.sample()))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(10)

    def last_answering(self, host: int) -> float | None:
        """When `host`'s hostsdir was last seen answering."""
        seen = [at for at, answering in list(self.samples) if host in answering]
        return seen[-1] if seen else None

    def first_answering(self, since: float, other_than: int) -> float | None:
        for at, answering in list(self.samples):
            if at >= since and set(answering) - {other_than}:
                return at
        return None


@contextlib.contextmanager
def busy_cpus(count: int):
    """`count` CPU-bound processes (at the default Nice), stopped by their pids after."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait(10)


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path, hostsdir=True).up()
    yield lab
    lab.down()


def host_config(tmp_path, host: Host, redis_url: str, ironic_url: str, namespace: str):
    options = worker_options(
        host,
        "dnsmasq",
        {
            "pxe_filter": {
                "whitelist_source": "ironic",
                "auto_discovery": True,
                "watchdog_timeout": WATCHDOG,
                "close_timeout": CLOSE,
            },
            "dnsmasq_pxe_filter": {"dhcp_hostsdir": str(host.hostsdir)},
            "coordination": {
                "backend_url": coordination_url(redis_url, namespace),
                "lease_timeout": LEASE,
                "election_interval": 0.5,
            },
            "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
            # The ports are listed once, before a leader opens: nothing else needed.
            "firewall": {"blacklist_sync_period": 0},
        },
    )
    path = tmp_path / f"pxe-filter-{host.index}.conf"
    path.write_text(render_config(options))
    return path


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_the_open_host_killed_or_frozen_never_two_hostsdirs_answer(
    tmp_path, lab, redis_server, ironic_url, how
):
    namespace = f"test-{uuid.uuid4().hex[:12]}"
    units = {
        host.index: Unit(
            tmp_path, host, host_config(tmp_path, host, redis_server, ironic_url, namespace)
        )
        for host in lab.hosts
    }
    hostsdirs = Hostsdirs(lab.hosts)
    logs = lambda: "\n".join(unit.log() for unit in units.values())  # noqa: E731
    try:
        for unit in units.values():
            unit.start()
        # The first leader waits DELAY too: nobody can tell it that nobody led before.
        leader = wait_for(
            lambda: hostsdirs.filtering() and len(opened := hostsdirs.sample()) == 1 and opened[0],
            DELAY + 30,
            0.1,
            lambda: f"one hostsdir answering\n{logs()}",
        )
        assert all(unit.ready_at is not None for unit in units.values()), logs()
        victim = units[leader]
        hostsdirs.start()
        with lab.sampling(SAMPLER_MAC) as dhcp, busy_cpus(HOGS):
            wait_for(lambda: len(dhcp.read()) >= 5, 10, message="DHCP samples")
            moment = time.monotonic()
            victim.process.send_signal(getattr(signal, how))
            answered = wait_for(
                lambda: hostsdirs.first_answering(moment, other_than=leader),
                LEASE + DELAY + 20,
                0.1,
                lambda: f"another hostsdir answering after {how}\n{logs()}",
            )
            wait_for(lambda: victim.closed_at, 30, 0.1, lambda: f"the close\n{logs()}")
            # A second more of samples with the new leader open.
            wait_for(lambda: hostsdirs.samples[-1][0] > answered + 1, 10, 0.1, "1 s more")
            offers = dhcp.read()
        hostsdirs.stop()
        both = [
            (at - moment, answering) for at, answering in hostsdirs.samples if len(answering) > 1
        ]
        closed = victim.closed_at - moment
        assert not both, (
            f"two hostsdirs answering (s after {how}, hosts): {both[:5]}; the killed host "
            f"closed after {closed:.2f} s\n{logs()}"
        )
        assert len(hostsdirs.samples) > (answered - moment) / 0.1  # sampled all along
        twice = [s for s in offers if len(s["servers"]) > 1]
        assert not twice, f"two hosts offered one DISCOVER: {twice[:5]}"
        assert "PXE service closed" in victim.close_output, logs()
        if how == "SIGSTOP":
            assert victim.watchdog_fired_at is not None
            fired = victim.watchdog_fired_at - moment
            assert WATCHDOG - 0.6 <= fired <= WATCHDOG + 2, fired  # a ping within 0.5 s before
        print(
            f"{how} of host{leader}: "
            + (
                f"watchdog SIGKILL after {victim.watchdog_fired_at - moment:.2f} s, "
                if victim.watchdog_fired_at
                else ""
            )
            + f"died after {victim.died_at - moment:.2f} s; its hostsdir last answering "
            f"{hostsdirs.last_answering(leader) - moment:.2f} s after, ExecStopPost's "
            f"`inspector firewall close` done {victim.closed_at - victim.died_at:.2f} s after "
            f"the death; another host answering after {answered - moment:.2f} s; "
            f"{len(hostsdirs.samples)} hostsdir samples, {len(offers)} DISCOVERs, none twice"
        )
    finally:
        hostsdirs.stop()
        for unit in units.values():
            unit.terminate()
        for unit in units.values():
            unit.join()
