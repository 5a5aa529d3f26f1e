"""A PXE network in network namespaces for the firewall tests (a helper, not a test).

One namespace is the switch (bridge `br0`); each inspector host is a namespace with
`pxe0` (10.251.0.<i>/24) on the bridge and a dnsmasq answering DHCP on it from its own
range (10.251.0.<100 + 10 i>...), so an offer says which host made it; the bare-metal
node is a namespace with `eth0` on the bridge, whose MAC the test chooses. Nothing
touches the root namespace: the workers run there and reach their namespace's
firewall through `[pxe_filter] root_helper = ip netns exec <host>`.

For one driver alone, `scratch_namespace()` is one namespace with a veth pair; its
`delivered` and `offered` send frames from chosen MACs and say which got through.

Needs root, iproute2, dnsmasq and dhclient (scripts/test installs them).
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

from inspector.firewall.commands import Runner
from tests.conftest import service_unavailable
from tests.integration.cluster import wait_for

#: The hosts' subnet; host i has 10.251.0.i and offers 10.251.0.(100 + 10 i) to +9.
SUBNET = "10.251.0"
#: Seconds dhclient tries before it gives up (a node that gets no lease).
DHCLIENT_TIMEOUT = 3

#: Sends a DHCPDISCOVER (broadcast flag, fresh xid) from one MAC every `interval`
#: seconds out of `interface`, and prints one JSON line per DISCOVER once its answers
#: had `interval` seconds to come: {"xid", "at" (epoch), "servers": [offering IPs]}.
#: Runs until SIGTERM; OFFERs are recognised by xid, whatever server sent them.
SAMPLER = r"""
import json, select, signal, socket, struct, sys, time
interface, mac, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
raw_mac = bytes.fromhex(mac.replace(":", ""))
def checksum(data):
    total = sum(struct.unpack("!10H", data))
    while total >> 16: total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
def discover(xid):
    bootp = struct.pack("!BBBBIHH16s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(16),
                        raw_mac, b"", b"")
    payload = bootp + b"\x63\x82\x53\x63\x35\x01\x01\xff"
    udp = struct.pack("!HHHH", 68, 67, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes(4), b"\xff" * 4)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return b"\xff" * 6 + raw_mac + b"\x08\x00" + ip + udp
def server_of(data):
    options, i = data[42 + 240:], 0
    while i < len(options) and options[i] != 255:
        if options[i] == 0:
            i += 1; continue
        if options[i] == 54:
            return socket.inet_ntoa(options[i + 2:i + 6])
        i += 2 + options[i + 1]
    return socket.inet_ntoa(data[26:30])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
out.bind((interface, 0))
pending = {}
xid = 1
next_send = time.monotonic()
while not stop:
    now = time.monotonic()
    if now >= next_send:
        out.send(discover(xid))
        pending[xid] = (time.time(), now, set())
        xid += 1
        next_send += interval
    for old in [x for x, (_, sent, _) in pending.items() if now - sent > interval]:
        at, _, servers = pending.pop(old)
        print(json.dumps({"xid": old, "at": at, "servers": sorted(servers)}), flush=True)
    ready = select.select([out], [], [], max(0.0, min(next_send - time.monotonic(), 0.01)))
    if not ready[0]:
        continue
    data, address = out.recvfrom(2048)
    if address[2] == socket.PACKET_OUTGOING or len(data) < 282 or data[23] != 17:
        continue
    if struct.unpack("!H", data[36:38])[0] != 68 or data[42] != 2:
        continue
    got = struct.unpack("!I", data[46:50])[0]
    if got in pending:
        pending[got][2].add(server_of(data))
"""


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=30)


def _binary(name: str) -> None:
    if not (shutil.which(name) or os.path.exists(f"/usr/sbin/{name}")):
        service_unavailable(f"{name} is not installed (scripts/test installs it)")


@dataclasses.dataclass
class Host:
    """One inspector host's namespace and its dnsmasq."""

    index: int
    namespace: str
    directory: pathlib.Path
    #: dnsmasq's --dhcp-hostsdir (the dnsmasq driver's files), answering only the MACs
    #: with a record there; None: dnsmasq answers everyone (the kernel drivers filter).
    hostsdir: pathlib.Path | None = None

    @property
    def address(self) -> str:
        return f"{SUBNET}.{self.index}"

    @property
    def root_helper(self) -> str:
        return f"ip netns exec {self.namespace}"

    @property
    def dnsmasq_log(self) -> pathlib.Path:
        return self.directory / "dnsmasq.log"

    def run(self, *argv: str, check: bool = True) -> str:
        return _run("ip", "netns", "exec", self.namespace, *argv, check=check).stdout

    def start_dnsmasq(self) -> None:
        first = 100 + 10 * self.index
        self.run(
            "dnsmasq",
            "--conf-file=/dev/null",
            "--port=0",
            "--user=root",
            "--group=root",
            "--interface=pxe0",
            "--bind-interfaces",
            "--no-ping",
            f"--dhcp-range={SUBNET}.{first},{SUBNET}.{first + 9},2m",
            f"--dhcp-leasefile={self.directory / 'leases'}",
            f"--pid-file={self.directory / 'dnsmasq.pid'}",
            f"--log-facility={self.dnsmasq_log}",
            "--log-dhcp",
            *(
                (f"--dhcp-hostsdir={self.hostsdir}", "--dhcp-ignore=tag:!known")
                if self.hostsdir
                else ()
            ),
        )

    def stop_dnsmasq(self) -> None:
        pidfile = self.directory / "dnsmasq.pid"
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)

    def heard(self, mac: str) -> bool:
        """Whether this host's dnsmasq ever received a DHCP packet from mac."""
        try:
            return mac.lower() in self.dnsmasq_log.read_text().lower()
        except FileNotFoundError:
            return False


class Lab:
    """The switch, the hosts and the node; `down()` removes all of it."""

    def __init__(self, tmp_path: pathlib.Path, hosts: int = 3, *, hostsdir: bool = False) -> None:
        if os.geteuid() != 0:
            service_unavailable("network namespaces need root")
        for name in ("ip", "dnsmasq", "dhclient"):
            _binary(name)
        self.tmp_path = tmp_path
        prefix = f"fw{uuid.uuid4().hex[:6]}"
        self.switch = f"{prefix}-sw"
        self.node = f"{prefix}-node"
        self.hosts = []
        for index in range(1, hosts + 1):
            directory = tmp_path / f"host{index}"
            directory.mkdir()
            host = Host(index, f"{prefix}-h{index}", directory)
            if hostsdir:
                host.hostsdir = directory / "hostsdir"
                host.hostsdir.mkdir()
            self.hosts.append(host)
        self._namespaces: list[str] = []

    def _add_namespace(self, name: str) -> None:
        created = _run("ip", "netns", "add", name, check=False)
        if created.returncode != 0:
            service_unavailable(f"cannot create a network namespace: {created.stderr.strip()}")
        self._namespaces.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def _plug(self, namespace: str, inside: str, port: str) -> None:
        """A veth from the switch's `port` to `inside` in namespace."""
        _run("ip", "-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", inside)
        _run("ip", "-n", self.switch, "link", "set", inside, "netns", namespace)
        _run("ip", "-n", self.switch, "link", "set", port, "master", "br0", "up")

    def up(self) -> "Lab":
        self._add_namespace(self.switch)
        _run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts:
            self._add_namespace(host.namespace)
            self._plug(host.namespace, "pxe0", f"port{host.index}")
            _run("ip", "-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "pxe0")
            _run("ip", "-n", host.namespace, "link", "set", "pxe0", "up")
            host.start_dnsmasq()
        self._add_namespace(self.node)
        self._plug(self.node, "eth0", "port0")
        _run("ip", "-n", self.node, "link", "set", "eth0", "up")
        return self

    def down(self) -> None:
        for host in self.hosts:
            host.stop_dnsmasq()
        for name in reversed(self._namespaces):
            _run("ip", "netns", "del", name, check=False)
        self._namespaces.clear()

    def set_node_mac(self, mac: str) -> None:
        _run("ip", "-n", self.node, "link", "set", "eth0", "down")
        _run("ip", "-n", self.node, "link", "set", "eth0", "address", mac)
        _run("ip", "-n", self.node, "link", "set", "eth0", "up")

    def lease(self, mac: str) -> dict | None:
        """Run dhclient once in the node with `mac`: the lease's server and address,
        or None when no server answered within DHCLIENT_TIMEOUT."""
        self.set_node_mac(mac)
        # A fresh lease file: dhclient falls back on a recorded lease nobody answers for.
        directory = self.tmp_path / f"dhclient-{mac.replace(':', '')}-{uuid.uuid4().hex[:6]}"
        directory.mkdir()
        config, leases, pidfile = (directory / n for n in ("dhclient.conf", "leases", "pid"))
        config.write_text(f"timeout {DHCLIENT_TIMEOUT};\ninitial-interval 1;\nretry 60;\n")
        # -sf /bin/true: no script, so nothing (resolv.conf!) is configured anywhere.
        result = _run(
            *("ip", "netns", "exec", self.node, "dhclient", "-1", "-v"),
            *("-sf", "/bin/true", "-cf", str(config), "-lf", str(leases), "-pf", str(pidfile)),
            "eth0",
            check=False,
        )
        # With a lease dhclient stays (to renew): stop the one we started, by its pid.
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
        if result.returncode != 0 or not leases.exists():
            return None
        text = leases.read_text()
        server = text.split("option dhcp-server-identifier ")[-1].split(";")[0]
        address = text.split("fixed-address ")[-1].split(";")[0]
        return {"server": server, "address": address}

    @contextlib.contextmanager
    def sampling(self, mac: str, interval: float = 0.05) -> Iterator["Samples"]:
        """DISCOVERs from `mac` every `interval` s while the block runs; the Samples."""
        self.set_node_mac(mac)
        output = self.tmp_path / f"samples-{uuid.uuid4().hex[:6]}.jsonl"
        with open(output, "w") as sink:
            sampler = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.node,
                    sys.executable,
                    "-c",
                    SAMPLER,
                    "eth0",
                    mac,
                    str(interval),
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        samples = Samples(output)
        try:
            wait_for(samples.read, 10, message="the sampler's first sample")
            yield samples
        finally:
            sampler.terminate()
            sampler.wait(10)


class Samples:
    """The sampler's lines: which hosts offered an address to each DISCOVER."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path

    def read(self) -> list[dict]:
        lines = self.path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def servers_since(self, moment: float) -> list[list[str]]:
        return [s["servers"] for s in self.read() if s["at"] >= moment]

    def first_from(self, moment: float, exclude: str | None = None) -> float | None:
        """When a DISCOVER sent after `moment` was first answered by a server other
        than `exclude`."""
        for sample in self.read():
            if sample["at"] >= moment and set(sample["servers"]) - {exclude}:
                return sample["at"]
        return None


def wait_until(moment: float) -> None:
    """Until the wall clock passes moment (the sampler's clock)."""
    wait_for(lambda: time.time() > moment, max(0.0, moment - time.time()) + 5, 0.01)


# One namespace without a switch: frames from chosen MACs, straight to the PXE interface.

#: Sends frames from chosen MACs out of the veth peer and reports what arrived.
#: `udp`: UDP 68->67 broadcasts, received by a socket on port 67 of the PXE interface;
#: a last frame to port 6767 (never filtered) marks the end. `dhcp`: DHCPDISCOVERs; the
#: answers (DHCPOFFERs) are read on the peer, the last MAC must be answered and marks
#: the end (dnsmasq answers in order).
PROBE = r"""
import json, select, socket, struct, sys, time
mode, pxe, peer, *macs = sys.argv[1:]
def raw(m): return bytes.fromhex(m.replace(":", ""))
def checksum(data):
    total = sum(struct.unpack("!10H", data))
    while total >> 16: total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
def frame(src, dport, payload):
    udp = struct.pack("!HHHH", 68, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes(4), b"\xff" * 4)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return b"\xff" * 6 + raw(src) + b"\x08\x00" + ip + udp
def discover(src, xid):
    bootp = struct.pack("!BBBBIHH16s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(16),
                        raw(src), b"", b"")
    return bootp + b"\x63\x82\x53\x63\x35\x01\x01\xff"
out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
out.bind((peer, 0))
deadline = time.monotonic() + 5
seen = set()
if mode == "udp":
    sockets = []
    for port in (67, 6767):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, pxe.encode())
        s.bind(("", port))
        sockets.append(s)
    for mac in macs:
        out.send(frame(mac, 67, mac.encode()))
    out.send(frame(macs[0], 6767, b"end"))
    while time.monotonic() < deadline:
        ready, _, _ = select.select(sockets, [], [], 0.1)
        if sockets[1] in ready:
            break
    else:
        sys.exit("the end marker never arrived")
    sockets[0].setblocking(False)
    while True:
        try:
            seen.add(sockets[0].recv(64).decode())
        except BlockingIOError:
            break
else:
    for xid, mac in enumerate(macs):
        out.send(frame(mac, 67, discover(mac, xid)))
    while macs[-1] not in seen and time.monotonic() < deadline:
        if not select.select([out], [], [], 0.1)[0]:
            continue
        data, address = out.recvfrom(2048)
        if address[2] == socket.PACKET_OUTGOING or data[23] != 17:
            continue
        if struct.unpack("!H", data[36:38])[0] == 68 and data[42] == 2:
            seen.add(":".join(f"{b:02x}" for b in data[70:76]))
print(json.dumps(sorted(seen)))
"""


@dataclasses.dataclass
class Namespace:
    """A scratch network namespace with a veth pair: `pxe0` (the PXE interface) and
    `pxe0-peer` (where the nodes' frames come from)."""

    name: str
    pxe: str = "pxe0"
    peer: str = "pxe0-peer"

    @property
    def runner(self) -> Runner:
        return Runner(prefix=("ip", "netns", "exec", self.name), timeout=10.0)

    def run(self, *argv: str, check: bool = True, stdin: str | None = None) -> str:
        return self.runner.run(list(argv), check=check, stdin=stdin).stdout

    def delivered(self, macs: list[str]) -> set[str]:
        """Which of these source MACs reach a socket on UDP port 67 of the PXE interface."""
        out = self.run(sys.executable, "-c", PROBE, "udp", self.pxe, self.peer, *macs)
        return set(json.loads(out))

    def offered(self, macs: list[str]) -> set[str]:
        """Which MACs dnsmasq sends a DHCPOFFER to; the last one must get one."""
        out = self.run(sys.executable, "-c", PROBE, "dhcp", self.pxe, self.peer, *macs)
        return set(json.loads(out))

    @contextlib.contextmanager
    def dnsmasq(self, directory: pathlib.Path, *options: str) -> Iterator[None]:
        """A dnsmasq answering DHCP on the PXE interface (10.250.0.50 to .99) with
        `options`, its files in `directory`; stopped by its pid when the block ends."""
        _binary("dnsmasq")
        pidfile = directory / "dnsmasq.pid"
        self.run(
            *("dnsmasq", "--conf-file=/dev/null", "--port=0", "--user=root", "--group=root"),
            *(f"--interface={self.pxe}", "--bind-interfaces", "--no-ping"),
            *("--dhcp-range=10.250.0.50,10.250.0.99,1h", f"--pid-file={pidfile}"),
            f"--dhcp-leasefile={directory / 'leases'}",
            *options,
        )
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)


@contextlib.contextmanager
def scratch_namespace() -> Iterator[Namespace]:
    """A new network namespace with a veth pair, `pxe0` (10.250.0.1/24) and `pxe0-peer`,
    deleted with everything in it (rules, sets) when the block ends."""
    if os.geteuid() != 0:
        service_unavailable("network namespaces need root")
    _binary("ip")
    name = f"insp-fw-{uuid.uuid4().hex[:8]}"
    created = _run("ip", "netns", "add", name, check=False)
    if created.returncode != 0:
        service_unavailable(f"cannot create a network namespace: {created.stderr.strip()}")
    try:
        ns = Namespace(name)
        ns.run("ip", "link", "add", ns.pxe, "type", "veth", "peer", "name", ns.peer)
        ns.run("ip", "addr", "add", "10.250.0.1/24", "dev", ns.pxe)
        for link in ("lo", ns.pxe, ns.peer):
            ns.run("ip", "link", "set", link, "up")
        yield ns
    finally:
        _run("ip", "netns", "del", name)


# The firewall as the kernel holds it, read back in a host's namespace.


def _nft_table(host: Host) -> str:
    return host.run("nft", "list", "table", "inet", "ironic-inspector", check=False)


def _iptables_verdict(saved: str) -> list[list[str]]:
    """The rules of the main chain a packet can reach: up to the first unconditional
    verdict (a close or a whole replacement inserts in front of the old rules, which
    stay until the driver compacts)."""
    reached = []
    for line in saved.splitlines():
        words = line.split()
        if words[:2] == ["-A", "ironic-inspector"]:
            reached.append(words)
            if words[2:] in (["-j", "DROP"], ["-j", "ACCEPT"]):
                break
    return reached


def _iptables_open(host: Host) -> bool:
    saved = host.run("iptables-save", "-t", "filter", check=False)
    if "-j ironic-inspector" not in saved:
        return True  # no filter (yet): the port answers everyone
    now = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    for words in _iptables_verdict(saved):
        if words[-1].startswith("ironic-inspector-wl"):  # either slot's whitelist
            # --datestop holds through the second it names.
            if "--datestop" not in words or words[words.index("--datestop") + 1] >= now:
                return True
    return False


def _hostsdir(host: Host) -> dict[str, bool]:
    """The dnsmasq driver's records: file name -> answered (no `,ignore`)."""
    assert host.hostsdir is not None, "a lab without hostsdir"
    return {
        path.name: not path.read_text().strip().endswith(",ignore")
        for path in host.hostsdir.iterdir()
        if not path.name.startswith(".")
    }


def is_filtered(host: Host, driver: str) -> bool:
    """Whether the host's DHCP port goes through our rules at all."""
    if driver == "dnsmasq":
        return "unknown_hosts_filter" in _hostsdir(host)
    if driver == "iptables":
        return "-j ironic-inspector" in host.run("iptables-save", "-t", "filter", check=False)
    return "jump pxe" in _nft_table(host)


def is_open(host: Host, driver: str) -> bool:
    """Whether the host's rules let a DHCP packet from an unknown MAC through now (no
    rules at all: yes; dnsmasq: whether any record answers)."""
    if driver == "dnsmasq":
        return any(_hostsdir(host).values())
    if driver == "iptables":
        return _iptables_open(host)
    table = _nft_table(host)
    if "jump pxe" not in table:
        return True
    if "ether saddr @whitelist accept" not in table:
        return False
    if "@open" not in table:
        return True
    # An expiring rule set: the element of @open must still be there, and the deadline
    # (`meta time >= "<local time>" drop`) not reached.
    if "67 timeout" not in table.split("set open")[1].split("}")[0]:
        return False
    deadline = table.split('meta time >= "')[1].split('"')[0]
    return time.time() < time.mktime(time.strptime(deadline, "%Y-%m-%d %H:%M:%S"))


def listed(host: Host, driver: str, name: str) -> set[str]:
    """The MACs of the host's whitelist or blacklist, as the kernel holds them: for the
    whitelist, the overrides of a removal or readmission not yet compacted count (dnsmasq:
    the MAC files answered, or ignored)."""
    if driver == "dnsmasq":
        records = _hostsdir(host)
        records.pop("unknown_hosts_filter", None)
        return {mac for mac, answered in records.items() if answered == (name == "whitelist")}
    if driver == "iptables":
        saved = host.run("iptables-save", "-t", "filter", check=False)
        # The live slot's chain: the one the verdict jumps to, else the one there is.
        jumped = [words[-1] for words in _iptables_verdict(saved)]
        slot = (
            "2" if "ironic-inspector-wl2" in jumped or ":ironic-inspector-wl " not in saved else ""
        )
        saved = saved.lower()
        chain = "ironic-inspector-" + ("wl" if name == "whitelist" else "bl") + slot
        verdicts: dict[str, bool] = {}
        for line in saved.splitlines():
            if line.startswith(f"-a {chain} "):
                # The first rule on a MAC decides (-j return: revoked).
                mac = line.split("--mac-source ")[1].split()[0]
                verdicts.setdefault(mac, not line.endswith("-j return"))
        return {mac for mac, listed in verdicts.items() if listed}
    text = host.run("nft", "-j", "list", "set", "inet", "ironic-inspector", name, check=False)
    if not text:
        return set()
    macs = set()
    for item in json.loads(text)["nftables"]:
        if "set" in item:
            macs = {str(e).lower() for e in item["set"].get("elem", [])}
    if name == "whitelist":
        macs = _overridden(host, macs)
    return macs


def _overridden(host: Host, whitelist: set[str]) -> set[str]:
    """The whitelist set as the chain `overrides` (newest first) leaves it."""
    text = host.run("nft", "list", "chain", "inet", "ironic-inspector", "overrides", check=False)
    seen = set()
    for line in text.splitlines():
        words = line.split()
        if words[:2] == ["ether", "saddr"] and words[2] not in seen:
            seen.add(words[2])
            (whitelist.add if words[3] == "accept" else whitelist.discard)(words[2])
    return whitelist


def worker_options(
    host: Host, driver: str, extra: dict[str, dict] | None = None
) -> dict[str, dict]:
    """A worker's own options: its host name and its namespace's firewall."""
    options: dict[str, dict] = {
        "DEFAULT": {"host": f"host{host.index}"},
        "pxe_filter": {"driver": driver, "root_helper": host.root_helper},
        "iptables": {"dnsmasq_interface": "pxe0"},
    }
    for section, values in (extra or {}).items():
        options.setdefault(section, {}).update(values)
    return options


def start_worker(cluster, host: Host, driver: str, extra: dict[str, dict] | None = None):
    """`inspector worker` in the root namespace with the host's firewall, through a
    second configuration file (`host<i>.conf`) laid over the deployment's."""
    from tests.integration.cluster import INSPECTOR, render_config  # noqa: PLC0415

    path = cluster.tmp_path / f"host{host.index}.conf"
    path.write_text(render_config(worker_options(host, driver, extra)))
    args = [*INSPECTOR, "worker", "--config-file", str(cluster.config_path)]
    return cluster._spawn("worker", [*args, "--config-file", str(path)])
