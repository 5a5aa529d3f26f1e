"""The two PXE filters under test, each a process writing its own dnsmasq hostsdir:
Ironic's `ironic-pxe-filter` (reading Ironic's database, its syncs counted by
counted_ironic_pxe_filter.py) and ours (`inspector pxe-filter` with
`[pxe_filter] whitelist_source = ironic`, calling Ironic's API through a counting proxy).

Both write a file per MAC named after it, `<mac>\\n` when allowed and
`<mac>,ignore\\n` when denied (ironic-pxe-filter's format, which ours writes too), so
one watcher reads both. Each filter's processes are one process group, stopped by
signalling that group.
"""

import json
import os
import pathlib
import signal
import subprocess
import time

import kombu

from bench.fleet import peer, procstat, proxy
from bench.fleet.batch import cpu_seconds
from bench.pxe import ironic_site

ROOT = ironic_site.ROOT
COUNTED = pathlib.Path(__file__).resolve().parent / "counted_ironic_pxe_filter.py"
#: Seconds a filter gets to leave after SIGTERM before its group gets SIGKILL.
STOP_TIMEOUT = 20.0
#: Seconds without a listing that separate two of our reconciles in the proxy's calls.
RECONCILE_GAP = 1.0


def entry(hostsdir: pathlib.Path, mac: str) -> str | None:
    """'allow', 'deny' or None (no file, or one being written) for `mac`."""
    try:
        text = (hostsdir / mac).read_text()
    except OSError:
        return None
    if text == f"{mac}\n":
        return "allow"
    if text == f"{mac},ignore\n":
        return "deny"
    return None


class Filter:
    """A filter process (its group) writing `hostsdir`."""

    name = ""

    def __init__(self, hostsdir: pathlib.Path, log: pathlib.Path) -> None:
        hostsdir.parent.mkdir(parents=True, exist_ok=True)
        self.hostsdir = hostsdir
        self.log = log
        self.process: subprocess.Popen | None = None

    def _spawn(self, argv: list[str]) -> None:
        self.hostsdir.mkdir(parents=True, exist_ok=True)
        for stale in self.hostsdir.iterdir():
            stale.unlink()
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        """Whether it hears every change it is meant to hear (its start-up is over)."""
        return self.alive()

    def cpu(self) -> float:
        """user+system CPU seconds of its processes so far."""
        assert self.process is not None
        return sum(cpu_seconds(procstat.in_groups({self.process.pid})).values())

    def tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process is None:
            return
        group = self.process.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
                break
            except subprocess.TimeoutExpired:
                continue
        self.process = None


class Theirs(Filter):
    """ironic-pxe-filter on Ironic's configuration files plus one of its own: its
    [pxe_filter] hostsdir and sync_period (None: its default)."""

    name = "ironic-pxe-filter"

    def __init__(
        self, ironic: ironic_site.PxeIronic, directory: pathlib.Path, period: float | None
    ):
        super().__init__(directory / "theirs-hostsdir", directory / "ironic-pxe-filter.log")
        self.ironic = ironic
        self.period = period
        self.config = directory / "ironic-pxe-filter.conf"
        self.ledger = directory / "ironic-pxe-filter-syncs.jsonl"

    def start(self) -> "Theirs":
        self.ledger.unlink(missing_ok=True)
        options = {"dhcp_hostsdir": self.hostsdir}
        if self.period is not None:
            options["sync_period"] = int(self.period)
        self.config.write_text(peer.render_config({"pxe_filter": options}))
        python = self.ironic.venv / "bin" / "python"
        self._spawn(
            [str(python), str(COUNTED), str(self.ledger)]
            + [arg for conf in self.ironic.configs() for arg in ("--config-file", str(conf))]
            + ["--config-file", str(self.config)]
            + ["--log-file", str(self.log.with_suffix(".oslo.log"))]
        )
        return self

    def syncs(self) -> list[dict]:
        """Its syncs so far (counted_ironic_pxe_filter.py's records)."""
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines() if line]


def ours_config(
    hostsdir: pathlib.Path,
    *,
    ironic_url: str,
    rabbitmq_url: str,
    redis_url: str,
    topic: str,
    period: float | None,
    notifications: bool = True,
    host: str = "pxebench",
    single_host: bool = True,
    full_period: float | None = None,
) -> str:
    """`inspector pxe-filter`'s configuration: defaults but for the period (None:
    the defaults: without notifications the leader then polls the nodes under
    inspection every second), the full port listing's period (None: the default) and
    what names the services."""
    firewall: dict = {
        "channel_url": ironic_site.oslo_url(rabbitmq_url),
        "channel_topic": f"{topic}_firewall",  # not the tests' channel on the same broker
    }
    if notifications:
        firewall["ironic_topic"] = topic
    if full_period is not None:
        firewall["full_port_listing_period"] = full_period
    if period is not None:
        # Every poll at that period: the fast one without notifications included.
        firewall |= {
            "whitelist_sync_period": period,
            "blacklist_sync_period": period,
            "inspection_poll_interval": period,
        }
    return peer.render_config(
        {
            "DEFAULT": {"host": host},
            "pxe_filter": {
                "driver": "dnsmasq",
                "whitelist_source": "ironic",
                "inspect_interfaces": "agent",
            },
            "dnsmasq_pxe_filter": {"dhcp_hostsdir": hostsdir},
            "firewall": firewall,
            # Its own Redis database: the election's group is not the tests' one. One
            # PXE host: its leader opens without waiting for another's close.
            "coordination": {
                "backend_url": f"{redis_url.rsplit('/', 1)[0]}?db=9",
                "single_host": single_host,
            },
            "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
        }
    )


class Ours(Filter):
    """`inspector pxe-filter`, its Ironic calls through a counting proxy."""

    name = "inspector pxe-filter"

    def __init__(self, ironic: ironic_site.PxeIronic, directory: pathlib.Path, **options):
        super().__init__(directory / "ours-hostsdir", directory / "inspector-pxe-filter.log")
        self.proxy = proxy.Proxy(ironic.url, lambda _node, _target: None)
        self.config = directory / "inspector-pxe-filter.conf"
        self.options = options

    def start(self) -> "Ours":
        self.proxy.start()
        self.config.write_text(
            ours_config(self.hostsdir, ironic_url=self.proxy.url, **self.options)
        )
        command = [str(ROOT / ".venv" / "bin" / "inspector"), "pxe-filter"]
        self._spawn([*command, "--config-file", str(self.config)])
        return self

    def ready(self) -> bool:
        """Alive, and with notifications, consuming the queue Ironic's notifications
        reach it by (those sent before it is bound are lost: its reconcile has them)."""
        if not self.alive() or not self.options.get("notifications", True):
            return self.alive()
        queue = f"{self.options['topic']}_firewall.{self.options.get('host', 'pxebench')}.ironic"
        with kombu.Connection(self.options["rabbitmq_url"], connect_timeout=5) as connection:
            try:
                declared = connection.channel().queue_declare(queue=queue, passive=True)
            except connection.channel_errors:  # not declared yet
                return False
        return declared.consumer_count > 0

    def stop(self) -> None:
        super().stop()
        self.proxy.stop()


#: The kind of call of each of our listings: the reconcile of the nodes under inspection
#: (the leader's, and each new leader's before it opens), the listing of every port, and
#: the short listings sorted by Ironic's timestamps (the ports changed, the newest change).
NODES, PORTS, PORT_CHANGES = "GET nodes", "GET ports", "GET ports sorted"


def reconciles(calls: list[proxy.Call], kind: str | None = None) -> list[dict]:
    """The proxy's calls (of `kind` only, when given) grouped into listings: calls less
    than RECONCILE_GAP apart; each with its wall time (first call sent to last answer),
    its calls, their kinds and the time Ironic took for them."""
    groups: list[list[proxy.Call]] = []
    chosen = [c for c in calls if kind is None or c.kind == kind]
    for call in sorted(chosen, key=lambda c: c.at - c.seconds):
        if groups and call.at - call.seconds - max(c.at for c in groups[-1]) < RECONCILE_GAP:
            groups[-1].append(call)
        else:
            groups.append([call])
    return [
        {
            "at": group[0].at - group[0].seconds,
            "wall": max(c.at for c in group) - (group[0].at - group[0].seconds),
            "calls": len(group),
            "kinds": sorted({c.kind for c in group}),
            "ironic_seconds": sum(c.seconds for c in group),
        }
        for group in groups
    ]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout} s")
        time.sleep(interval)  # polling with a deadline
