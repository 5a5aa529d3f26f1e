"""The local cluster: the design's minimal topology on this machine, for operators trying
HA and for the end-to-end tests (`scripts/cluster up|down|status|kill|stop|start|restart|
upgrade`; `scripts/cluster_upgrade.py` holds the rolling upgrade).

PostgreSQL, Redis (the DLM) and RabbitMQ (the queue) and a standalone Ironic come from
scripts/services; on them: a scratch database, three `inspector api` processes behind one
HAProxy on 127.0.0.1, and three inspector hosts, network namespaces on one bridge, each
with a dnsmasq and an `inspector worker` (in the root namespace) whose nftables firewall
acts inside the host's namespace (`[pxe_filter] root_helper = ip netns exec <host>`).
The processes run a *release*: this checkout (or a git ref, or a directory) installed
with pip into a virtualenv of its own under the cluster's directory.

Everything it starts is recorded in `<dir>/state.json` as it goes, and only that is
stopped or removed: processes by pid and process group, namespaces and the database by
name, services only when `up` started them. It must not touch anything else.
"""

import argparse
import contextlib
import fcntl
import json
import os
import pathlib
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

REPO = pathlib.Path(__file__).resolve().parents[1]
#: Where `scripts/cluster` keeps its state unless told otherwise (--dir).
DEFAULT_DIR = REPO / ".cluster"
DEFAULT_PORT = 5050
APIS = 3
HOSTS = 3
#: The hosts' subnet on the bridge: host i is .i and leases from its own pool.
SUBNET = "10.252.0"
#: Host i's DHCP pool, disjoint from the others' (etc/inspector/dnsmasq.conf).
POOLS = {1: (100, 149), 2: (150, 199), 3: (200, 249)}
SERVICES = ("postgresql", "redis", "rabbitmq", "ironic")
SERVICE_ENV = {
    "postgresql": "INSPECTOR_TEST_POSTGRESQL_URL",
    "redis": "INSPECTOR_TEST_REDIS_URL",
    "rabbitmq": "INSPECTOR_TEST_RABBITMQ_URL",
    "ironic": "INSPECTOR_TEST_IRONIC_URL",
}
#: Commands the cluster runs, and the Debian package of each.
TOOLS = {"haproxy": "haproxy", "ip": "iproute2", "nft": "nftables", "dnsmasq": "dnsmasq-base"}
#: Seconds a process gets to answer after it was started.
START_TIMEOUT = 90.0
#: Seconds a process gets to leave after SIGTERM before its group gets SIGKILL; a worker
#: finishes its running tasks first ([worker] get_timeout + their time).
STOP_TIMEOUT = 70.0
#: The nftables table of the firewall ([iptables] firewall_chain).
NFT_TABLE = "ironic-inspector"


class ClusterError(Exception):
    """Something the cluster cannot do; the message says what to do about it."""


def say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """The first truthy result of predicate(); ClusterError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)  # polling a condition with a deadline
    return result


def run(*argv: str, check: bool = True, timeout: float = 60.0, **kwargs):
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs
    )
    if check and result.returncode != 0:
        raise ClusterError(f"{shlex.join(argv)} failed ({result.returncode}): {result.stderr}")
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def render_config(sections: dict[str, dict[str, Any]]) -> str:
    """An oslo.config INI file: booleans as true/false, lists comma-separated."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for name, value in options.items():
            text = value
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, list | tuple):
                text = ",".join(str(v) for v in value)
            lines.append(f"{name} = {text}")
        lines.append("")
    return "\n".join(lines)


def http_status(url: str, timeout: float = 2.0) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - our URLs
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- processes


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, process group) of a pid, or None when it does not exist."""
    try:
        text = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[2])


#: The processes this one started and that may not have ended yet, by pid: they are
#: reaped through their Popen only (a bare waitpid could take a recycled pid's status
#: from another child), and a Popen dropped while its process runs is a warning.
_SPAWNED: dict[int, subprocess.Popen] = {}


def _reap(pid: int) -> None:
    """Collect our own child once it ended (the tests run the cluster in-process; from
    the command line the processes outlive us and are not our children)."""
    child = _SPAWNED.get(pid)
    if child is not None and child.poll() is not None:
        _SPAWNED.pop(pid, None)


def is_ours(pid: int | None, marker: str) -> bool:
    """Whether pid is alive (not a zombie) and its command line names marker (our
    directory): a recycled pid is never taken for ours."""
    if not pid:
        return False
    _reap(pid)
    stat = _stat(pid)
    if stat is None or stat[0] in "ZX":
        return False
    try:
        cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return marker.encode() in cmdline


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still alive (zombies do not count)."""
    _reap(pgid)
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))):
            if stat[1] == pgid and stat[0] not in "ZX":
                return True
    return False


def stop_group(pgid: int, timeout: float = STOP_TIMEOUT, sig: int | None = signal.SIGTERM) -> bool:
    """sig (unless None: already sent) to the group, then SIGKILL after timeout; True when
    it had to be killed. One SIGTERM only: a second one cuts a graceful stop short."""
    if sig is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
    deadline = time.monotonic() + timeout
    killed = False
    while group_alive(pgid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            wait_for(lambda: not group_alive(pgid), 10, f"process group {pgid} gone")
            killed = True
            break
        time.sleep(0.05)  # polling the group's exit with a deadline
    child = _SPAWNED.pop(pgid, None)
    if child is not None:
        child.wait(10)  # the leader has ended: collect it now
    return killed


def spawn(argv: list[str], log_path: pathlib.Path, cwd: pathlib.Path) -> subprocess.Popen:
    """Start argv in a session (and process group) of its own, detached from ours,
    appending to log_path; its pid is also its group's id."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as log:
        log.write(f"==== {time.strftime('%Y-%m-%d %H:%M:%S')} started: {shlex.join(argv)}\n")
        log.flush()
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _SPAWNED[process.pid] = process
    return process


# ---------------------------------------------------------------- services


def service_urls() -> dict[str, str]:
    """The services' URLs: the INSPECTOR_TEST_* variables, else `scripts/services env`."""
    urls = {name: os.environ.get(variable, "") for name, variable in SERVICE_ENV.items()}
    if all(urls.values()):
        return urls
    exports = run(str(REPO / "scripts" / "services"), "env").stdout
    for line in exports.splitlines():
        variable, _, value = line.removeprefix("export ").partition("=")
        for name, known in SERVICE_ENV.items():
            if variable == known and not urls[name]:
                urls[name] = value
    return urls


def service_answers(name: str, url: str) -> bool:
    if name == "ironic":
        # Patient: a busy Ironic (one API worker) is slow, not gone.
        return http_status(url.rstrip("/") + "/v1", timeout=15) == 200
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 2).close()
    except OSError:
        return False
    return True


# ---------------------------------------------------------------- network


def pxe_state(namespace: str) -> str:
    """'open', 'closed', or 'unfiltered' (no table, or no hook: dnsmasq would answer
    anyone), as the kernel of the host's namespace holds the nftables firewall now."""
    listing = run(
        "ip", "netns", "exec", namespace, "nft", "list", "table", "inet", NFT_TABLE, check=False
    )
    text = listing.stdout
    if listing.returncode != 0 or "jump pxe" not in text:
        return "unfiltered"
    if "ether saddr @whitelist accept" not in text:
        return "closed"
    if "set open" not in text:
        return "open"
    # An expiring rule set: open while the element of @open lives and the deadline
    # (`meta time >= "<local time>" drop`) has not come.
    if "elements" not in text.split("set open", 1)[1].split("}", 1)[0]:
        return "closed"
    if 'meta time >= "' in text:
        deadline = text.split('meta time >= "', 1)[1].split('"', 1)[0]
        if time.time() >= time.mktime(time.strptime(deadline, "%Y-%m-%d %H:%M:%S")):
            return "closed"
    return "open"


# ---------------------------------------------------------------- HAProxy


HAPROXY_CONFIG = """\
# Rendered by scripts/cluster.py, after etc/inspector/haproxy.cfg.
global
    maxconn 1024
    log stderr format short local0 info
    stats socket {socket} mode 600 level admin

defaults
    mode http
    log global
    option httplog
    option dontlog-normal
    # A request whose back end failed (refused, closed without answer, silent) is sent
    # again to another one; see etc/inspector/haproxy.cfg for what and why.
    retry-on conn-failure empty-response response-timeout
    option http-buffer-request
    retries 3
    option redispatch 1
    timeout connect 2s
    timeout http-request 30s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 5s
    timeout check 2s

frontend inspector
    bind 127.0.0.1:{port}
    option forwardfor
    # The request's id, the same on its retries: the API answers a start sent again as
    # the first attempt was.
    unique-id-format %[uuid()]
    http-request set-header X-Request-ID %[unique-id]
    http-request capture unique-id len 36
    http-request set-header X-Forwarded-Proto http
    http-request set-header X-Forwarded-Port %[dst_port]
    http-request del-header X-Forwarded-Host
    http-request del-header X-Forwarded-Prefix
    default_backend inspector_api

backend inspector_api
    balance roundrobin
    option httpchk GET /healthcheck
    http-check expect status 200
    default-server inter 500ms fall 2 rise 1
    # Not safe to send again: creating a rule, deleting.
    http-request disable-l7-retry if METH_POST {{ path_beg /v1/rules }}
    http-request disable-l7-retry if METH_DELETE
{servers}
"""


def haproxy_binary() -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
    binary = shutil.which("haproxy", path=path)
    if binary is None:
        raise ClusterError("haproxy is not installed: apt-get install haproxy")
    return binary


def haproxy_command(sock: pathlib.Path, command: str) -> str:
    """One command on HAProxy's stats socket; its answer."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(5)
        client.connect(str(sock))
        client.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def haproxy_servers(sock: pathlib.Path) -> dict[str, dict[str, str]]:
    """Back-end server name -> its `show stat` row ({} when HAProxy does not answer)."""
    try:
        lines = haproxy_command(sock, "show stat").splitlines()
    except OSError:
        return {}
    if not lines:
        return {}
    header = lines[0].lstrip("# ").split(",")
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
    return {
        row["svname"]: row
        for row in rows
        if row.get("pxname") == "inspector_api" and row["svname"] not in ("BACKEND", "FRONTEND")
    }


# ---------------------------------------------------------------- releases


def _source_files(source: pathlib.Path) -> list[str]:
    """A checkout's files as git sees them (tracked and new, not ignored), or every file
    of a plain directory but caches and virtualenvs."""
    listing = run(
        "git", "-C", str(source), "ls-files", "-co", "--exclude-standard", "-z", check=False
    )
    if listing.returncode == 0:
        return [name for name in listing.stdout.split("\0") if name]
    skip = {".git", ".venv", ".cluster", ".services", ".data", "__pycache__", "build"}
    return [
        str(path.relative_to(source))
        for path in source.rglob("*")
        if path.is_file() and not skip.intersection(path.relative_to(source).parts)
    ]


def copy_source(source: pathlib.Path | None, ref: str | None, target: pathlib.Path) -> str:
    """The release's source tree in target; a description of where it came from."""
    target.mkdir(parents=True)
    if ref:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", ref],
            capture_output=True,
            check=False,
        )
        if archive.returncode != 0:
            raise ClusterError(f"git archive {ref}: {archive.stderr.decode()}")
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
        return f"git ref {ref} of {REPO}"
    source = (source or REPO).resolve()
    for name in _source_files(source):
        path = source / name
        if path.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)
    return str(source)


def build_release(
    directory: pathlib.Path, name: str, source: pathlib.Path | None = None, ref: str | None = None
) -> pathlib.Path:
    """Install a source tree with pip into a virtualenv of its own, `<directory>/<name>`.

    The virtualenv sees this interpreter's site-packages (a .pth file) for the
    dependencies, so pip installs only the package, and whatever dependency is new."""
    release = directory / name
    if release.exists():
        shutil.rmtree(release)
    origin = copy_source(source, ref, release / "src")
    python = release / "venv" / "bin" / "python"
    run(sys.executable, "-m", "venv", "--without-pip", str(release / "venv"))
    purelib = run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    base = sysconfig.get_paths()["purelib"]
    (pathlib.Path(purelib.stdout.strip()) / "_cluster_base.pth").write_text(
        f"import site; site.addsitedir({base!r})\n"
    )
    say(f"installing {origin} into {release / 'venv'} (pip)")
    log = release / "pip.log"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-warn-script-location",
            str(release / "src"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise ClusterError(f"pip install of {origin} failed; see {log}")
    (release / "release.json").write_text(json.dumps({"name": name, "source": origin}))
    return release


# ---------------------------------------------------------------- the cluster


def require_root() -> None:
    if os.geteuid() != 0:
        raise ClusterError("the cluster needs root: network namespaces, nftables, dnsmasq")


def ensure_tools() -> None:
    """Install (Debian packages) the commands the cluster runs, when some are missing."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
    missing = [package for tool, package in TOOLS.items() if not shutil.which(tool, path=path)]
    if missing:
        say(f"installing {' '.join(missing)} (apt-get)")
        run("apt-get", "update", "-q", timeout=600)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(
            "apt-get",
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            *missing,
            timeout=900,
            env=env,
        )


def process_names() -> list[str]:
    """Every process of the cluster, in the order they start."""
    return [
        *(f"worker-{i}" for i in range(1, HOSTS + 1)),
        *(f"api-{i}" for i in range(1, APIS + 1)),
        "haproxy",
    ]


class Cluster:
    """The cluster recorded in one directory (state.json, configuration, logs, releases).

    Methods that change something hold the directory's lock (re-entrant in a thread);
    state.json is replaced atomically, so that readers never need the lock."""

    def __init__(self, directory: pathlib.Path = DEFAULT_DIR) -> None:
        self.dir = pathlib.Path(directory).resolve()
        self.logs = self.dir / "logs"
        self.state: dict[str, Any] = {}
        self._local = threading.local()

    # ------------------------------------------------------------ state

    def load(self) -> dict[str, Any]:
        try:
            return json.loads((self.dir / "state.json").read_text())
        except FileNotFoundError:
            return {}

    def save(self) -> None:
        path = self.dir / "state.json"
        if not self.state:
            path.unlink(missing_ok=True)
            return
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.state, indent=2, sort_keys=True))
        temporary.replace(path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[dict[str, Any]]:
        """The state, under the directory's lock; saved when the outermost block ends."""
        if getattr(self._local, "depth", 0):
            self._local.depth += 1
            try:
                yield self.state
            finally:
                self._local.depth -= 1
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._local.depth = 1
            try:
                self.state = self.load()
                yield self.state
            finally:
                self._local.depth = 0
                self.save()

    def record(self, key: str, value: Any) -> None:
        """Write down (at once) something the cluster is about to own."""
        with self.locked() as state:
            state[key] = value
            self.save()

    # ------------------------------------------------------------ names

    @property
    def ident(self) -> str:
        return self.load().get("id", "")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.load()['ports']['haproxy']}"

    @property
    def stats_socket(self) -> pathlib.Path:
        return self.dir / "haproxy.sock"

    def namespace(self, host: int | str) -> str:
        """The namespace of host i (1..HOSTS), or of the switch ('sw')."""
        return f"ic{self.ident}-{'sw' if host == 'sw' else f'h{host}'}"

    def release_path(self, name: str | None = None) -> pathlib.Path:
        return self.dir / "releases" / (name or self.load()["release"])

    def inspector(self, *args: str, release: str | None = None, timeout: float = 120.0):
        """`inspector ARGS --config-file <the cluster's>` of a release, to completion."""
        binary = self.release_path(release) / "venv" / "bin" / "inspector"
        config = ["--config-file", str(self.dir / "inspector.conf")]
        return run(str(binary), *args, *config, check=False, timeout=timeout, cwd=self.dir)

    def database_url(self) -> str:
        from sqlalchemy.engine import make_url  # noqa: PLC0415 - only for the database

        state = self.load()
        url = make_url(state["urls"]["postgresql"]).set(database=state["database"])
        return url.render_as_string(hide_password=False)

    # ------------------------------------------------------------ processes

    def pid(self, name: str) -> int | None:
        return self.load().get("processes", {}).get(name, {}).get("pid")

    def alive(self, name: str) -> bool:
        return is_ours(self.pid(name), str(self.dir))

    def _argv(self, name: str, release: str) -> list[str]:
        if name == "haproxy":
            return [haproxy_binary(), "-db", "-f", str(self.dir / "haproxy.cfg")]
        role, index = name.split("-")
        binary = str(self.release_path(release) / "venv" / "bin" / "inspector")
        shared = ["--config-file", str(self.dir / "inspector.conf")]
        own = self.dir / (f"{name}.conf" if role == "api" else f"host-{index}.conf")
        return [binary, role, *shared, "--config-file", str(own)]

    def start(self, name: str, release: str | None = None) -> int:
        """Start a process of the cluster unless it runs; its pid. Does not wait."""
        with self.locked() as state:
            if self.alive(name):
                return state["processes"][name]["pid"]
            release = release or state["release"]
            log = self.logs / f"{name}.log"
            offset = log.stat().st_size if log.exists() else 0
            pid = spawn(self._argv(name, release), log, self.dir).pid
            previous = state.setdefault("processes", {}).get(name, {})
            state["processes"][name] = {
                "pid": pid,
                "release": release if name != "haproxy" else "",
                "log_offset": offset,
                "started_at": time.time(),
                "starts": previous.get("starts", 0) + 1,
            }
            self.save()
            return pid

    def kill(self, name: str) -> None:
        """kill -9 of the process's group, until it is gone; no restart."""
        with self.locked():
            if self.alive(name):
                stop_group(self.pid(name), timeout=0, sig=signal.SIGKILL)

    def stop(self, names: list[str] | str, timeout: float = STOP_TIMEOUT) -> None:
        """SIGTERM to each process's group at once, then SIGKILL to what stayed."""
        names = [names] if isinstance(names, str) else names
        with self.locked():
            running = [self.pid(name) for name in names if self.alive(name)]
            for pgid in running:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGTERM)
            for pgid in running:
                if stop_group(pgid, timeout, sig=None):
                    say(f"process group {pgid} did not leave after SIGTERM: killed")

    def restart(self, name: str, release: str | None = None) -> None:
        self.stop(name)
        self.start(name, release)
        self.wait_ready(name)

    def log_tail(self, name: str, lines: int = 40) -> str:
        try:
            text = (self.logs / f"{name}.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _since_start(self, name: str) -> str:
        """What the process wrote to its log since its last start."""
        offset = self.load()["processes"][name].get("log_offset", 0)
        with open(self.logs / f"{name}.log", errors="replace") as log:
            log.seek(offset)
            return log.read()

    def is_ready(self, name: str) -> bool:
        """An API answers /healthcheck; a worker's pool runs; HAProxy serves."""
        if not self.alive(name):
            raise ClusterError(f"{name} exited:\n{self.log_tail(name)}")
        ports = self.load()["ports"]
        if name.startswith("api-"):
            return http_status(f"http://127.0.0.1:{ports[name]}/healthcheck") == 200
        if name.startswith("worker-"):
            return "Worker pool of" in self._since_start(name)
        return bool(haproxy_servers(self.stats_socket))

    def wait_ready(self, name: str, timeout: float = START_TIMEOUT) -> None:
        wait_for(lambda: self.is_ready(name), timeout, f"{name} ready (log {self.logs})")

    def haproxy(self, command: str) -> str:
        return haproxy_command(self.stats_socket, command)

    def servers(self) -> dict[str, dict[str, str]]:
        return haproxy_servers(self.stats_socket)

    def wait_server(self, name: str, status: str, timeout: float = START_TIMEOUT) -> None:
        """Until HAProxy shows back end `name` with status (UP: after a passed check)."""

        def reached() -> bool:
            row = self.servers().get(name, {})
            return row.get("status") == status and (
                status != "UP" or row.get("check_status") == "L7OK"
            )

        wait_for(reached, timeout, f"HAProxy back end {name} {status}")

    # ------------------------------------------------------------ up

    def up(
        self,
        port: int = DEFAULT_PORT,
        *,
        source: pathlib.Path | None = None,
        ref: str | None = None,
        options: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Start whatever of the cluster does not run yet (idempotent); returns once every
        API is healthy behind HAProxy and every worker's pool runs."""
        require_root()
        ensure_tools()
        with self.locked() as state:
            state.setdefault("id", secrets.token_hex(3))
            state.setdefault("options", {})
            for section, values in (options or {}).items():
                state["options"].setdefault(section, {}).update(values)
            self.save()
            self._ensure_services()
            self._ensure_release(source, ref)
            self._ensure_ports(port)
            self._ensure_database()
            self.write_configs()
            self._migrate()
            self._ensure_network()
            for name in process_names():
                if name != "haproxy":
                    self.start(name)
            for index in range(1, HOSTS + 1):
                self._ensure_dnsmasq(index)
            self._ensure_haproxy()
        for name in process_names():
            self.wait_ready(name)
        for index in range(1, APIS + 1):
            self.wait_server(f"api-{index}", "UP")

    def _ensure_services(self) -> None:
        """Start (scripts/services) the services that do not answer. Only one that
        scripts/services says it started is recorded, so that `down` stops it: a busy
        service that was slow to answer is somebody else's, and stays."""
        urls = service_urls()
        for name in SERVICES:
            if service_answers(name, urls[name]):
                continue
            say(f"{name} does not answer at {urls[name]}: scripts/services start {name}")
            result = run(str(REPO / "scripts" / "services"), "start", name, timeout=1800)
            if "already running" not in result.stderr + result.stdout:
                started = self.state.get("services_started", [])
                if name not in started:
                    self.record("services_started", [*started, name])
        self.record("urls", urls)

    def _ensure_release(self, source: pathlib.Path | None, ref: str | None) -> None:
        name = self.state.get("release")
        if name and (self.release_path(name) / "release.json").exists():
            if source or ref:
                say(f"the cluster runs release {name}: to change it, scripts/cluster upgrade")
            return
        name = self.next_release_name()
        self.record("release", name)
        build_release(self.dir / "releases", name, source, ref)

    def next_release_name(self) -> str:
        taken = {p.name for p in (self.dir / "releases").glob("r*")}
        return next(f"r{n}" for n in range(1, 10_000) if f"r{n}" not in taken)

    def _ensure_ports(self, port: int) -> None:
        ports = self.state.get("ports") or {}
        if "haproxy" not in ports:
            port = port or free_port()
            if not port_is_free(port):
                raise ClusterError(f"127.0.0.1:{port} is taken: scripts/cluster up --port N")
            ports["haproxy"] = port
        for index in range(1, APIS + 1):
            ports.setdefault(f"api-{index}", free_port())
        self.record("ports", ports)

    def _ensure_database(self) -> None:
        import sqlalchemy  # noqa: PLC0415 - only here and in down
        from sqlalchemy.pool import NullPool  # noqa: PLC0415

        if "database" not in self.state:
            self.record("database", f"inspector_cluster_{self.state['id']}")
        name = self.state["database"]
        admin = sqlalchemy.create_engine(
            self.state["urls"]["postgresql"], poolclass=NullPool, isolation_level="AUTOCOMMIT"
        )
        with admin.connect() as connection:
            query = sqlalchemy.text("SELECT 1 FROM pg_database WHERE datname = :name")
            if connection.execute(query, {"name": name}).first() is None:
                say(f"creating database {name}")
                connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
        admin.dispose()

    def settings(self) -> dict[str, dict[str, Any]]:
        """The configuration every process shares: the defaults below, then --set."""
        state = self.state
        ident, urls = state["id"], state["urls"]
        redis = urlsplit(urls["redis"]).netloc
        sections: dict[str, dict[str, Any]] = {
            "DEFAULT": {
                "auth_strategy": "noauth",
                "state_path": self.dir / "state",
                "listen_address": "127.0.0.1",
            },
            "database": {"connection": self.database_url()},
            "queue": {"transport_url": urls["rabbitmq"], "queue_name": f"cluster-{ident}"},
            "coordination": {
                "backend_url": f"redis://{redis}?timeout=5&namespace=inspector-cluster-{ident}"
            },
            "ironic": {"auth_type": "none", "endpoint_override": urls["ironic"]},
            "processing": {"store_data": "database"},
            "oslo_middleware": {"enable_proxy_headers_parsing": True},
            "worker": {"get_timeout": 1.0},
            "pxe_filter": {"driver": "nftables"},
            "iptables": {"dnsmasq_interface": "pxe0"},
            "firewall": {"channel_topic": f"inspector_firewall_{ident}"},
        }
        for section, values in state.get("options", {}).items():
            sections.setdefault(section, {}).update(values)
        return sections

    def write_configs(self) -> None:
        """inspector.conf, shared; api-N.conf (its host name and port); host-N.conf (its
        host name and the namespace its firewall commands run in)."""
        (self.dir / "state").mkdir(exist_ok=True)
        files = {"inspector.conf": self.settings()}
        for index in range(1, APIS + 1):
            name = f"api-{index}"
            port = self.state["ports"][name]
            files[f"{name}.conf"] = {"DEFAULT": {"host": name, "listen_port": port}}
        for index in range(1, HOSTS + 1):
            files[f"host-{index}.conf"] = {
                "DEFAULT": {"host": f"host{index}"},
                "pxe_filter": {"root_helper": f"ip netns exec {self.namespace(index)}"},
            }
        for name, sections in files.items():
            (self.dir / name).write_text(render_config(sections))

    def _migrate(self) -> None:
        result = self.inspector("db", "upgrade")
        if result.returncode != 0:
            raise ClusterError(f"inspector db upgrade failed:\n{result.stdout}{result.stderr}")
        say(result.stdout.strip().splitlines()[0] if result.stdout.strip() else "schema ready")

    # ------------------------------------------------------------ network

    def _add_namespace(self, name: str) -> bool:
        """Create (and record first) a namespace; False when it already exists."""
        existing = {line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines()}
        if name in existing:
            return False
        recorded = self.state.get("namespaces", [])
        if name not in recorded:
            self.record("namespaces", [*recorded, name])
        run("ip", "netns", "add", name)
        run("ip", "-n", name, "link", "set", "lo", "up")
        return True

    def _ensure_network(self) -> None:
        """The switch (a bridge in its namespace) and each host's namespace plugged into it
        with `pxe0` (SUBNET.i/24)."""
        switch = self.namespace("sw")
        if self._add_namespace(switch):
            run("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", switch, "link", "set", "br0", "up")
        for index in range(1, HOSTS + 1):
            host = self.namespace(index)
            if not self._add_namespace(host):
                continue
            port = f"port{index}"
            run("ip", "-n", switch, "link", "add", port, "type", "veth", "peer", "name", "pxe0")
            run("ip", "-n", switch, "link", "set", "pxe0", "netns", host)
            run("ip", "-n", switch, "link", "set", port, "master", "br0", "up")
            run("ip", "-n", host, "addr", "add", f"{SUBNET}.{index}/24", "dev", "pxe0")
            run("ip", "-n", host, "link", "set", "pxe0", "up")

    def _wait_filtered(self, index: int) -> None:
        """Until the host's worker closed its firewall (a table in the namespace)."""
        worker, namespace = f"worker-{index}", self.namespace(index)

        def filtered() -> bool:
            if not self.alive(worker):
                raise ClusterError(f"{worker} exited:\n{self.log_tail(worker)}")
            return pxe_state(namespace) != "unfiltered"

        wait_for(filtered, START_TIMEOUT, f"{worker} closing the firewall of {namespace}")

    def dnsmasq_pid(self, index: int) -> int | None:
        return self.load().get("dnsmasq", {}).get(str(index))

    def _ensure_dnsmasq(self, index: int) -> None:
        """The host's dnsmasq, started only once its worker closed the host's firewall:
        a host never answers DHCP unfiltered."""
        if is_ours(self.dnsmasq_pid(index), str(self.dir)):
            return
        if self.firewall_driver() == "nftables":
            self._wait_filtered(index)
        directory = self.dir / "hosts" / f"host{index}"
        directory.mkdir(parents=True, exist_ok=True)
        pidfile = directory / "dnsmasq.pid"
        pidfile.unlink(missing_ok=True)
        first, last = POOLS[index]
        run(
            *("ip", "netns", "exec", self.namespace(index), "dnsmasq", "--conf-file=/dev/null"),
            *("--port=0", "--user=root", "--group=root", "--interface=pxe0"),
            *("--bind-interfaces", "--no-ping", "--dhcp-sequential-ip", "--log-dhcp"),
            f"--dhcp-range={SUBNET}.{first},{SUBNET}.{last},10m",
            f"--dhcp-leasefile={directory / 'leases'}",
            f"--pid-file={pidfile}",
            f"--log-facility={self.logs / f'dnsmasq-{index}.log'}",
        )
        pid = wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), 10, "dnsmasq")
        self.record("dnsmasq", {**self.state.get("dnsmasq", {}), str(index): int(pid)})

    def firewall_driver(self) -> str:
        options = self.load().get("options", {})
        return options.get("pxe_filter", {}).get("driver", "nftables")

    def pxe(self) -> dict[int, str]:
        """Host index -> its PXE firewall now: open, closed or unfiltered (nftables; with
        another [pxe_filter] driver, n/a)."""
        hosts = range(1, HOSTS + 1)
        if self.firewall_driver() != "nftables":
            return dict.fromkeys(hosts, "n/a")
        return {index: pxe_state(self.namespace(index)) for index in hosts}

    # ------------------------------------------------------------ HAProxy

    def _ensure_haproxy(self) -> None:
        ports = self.state["ports"]
        servers = "\n".join(
            f"    server api-{i} 127.0.0.1:{ports[f'api-{i}']} check" for i in range(1, APIS + 1)
        )
        config = self.dir / "haproxy.cfg"
        config.write_text(
            HAPROXY_CONFIG.format(socket=self.stats_socket, port=ports["haproxy"], servers=servers)
        )
        run(haproxy_binary(), "-c", "-f", str(config))
        if not self.alive("haproxy"):
            if not port_is_free(ports["haproxy"]):
                raise ClusterError(f"127.0.0.1:{ports['haproxy']} is taken by something else")
            self.start("haproxy")

    # ------------------------------------------------------------ down

    def down(self) -> None:
        """Stop what `up` started and remove what it created, as recorded; keep logs/."""
        with self.locked() as state:
            if not state:
                say(f"no cluster in {self.dir}")
                return
            self.stop(
                [name for name in reversed(process_names()) if name in state.get("processes", {})]
            )
            for pid in state.get("dnsmasq", {}).values():
                if is_ours(pid, str(self.dir)):
                    os.kill(pid, signal.SIGTERM)
                    wait_for(lambda pid=pid: not is_ours(pid, str(self.dir)), 10, "dnsmasq gone")
            for name in reversed(state.get("namespaces", [])):
                run("ip", "netns", "del", name, check=False)
            if "urls" in state:
                self._drop_backends()
            for name in reversed(state.get("services_started", [])):
                say(f"stopping {name}, which `up` started")
                run(str(REPO / "scripts" / "services"), "stop", name, check=False, timeout=300)
            for name in ("releases", "hosts", "state"):
                shutil.rmtree(self.dir / name, ignore_errors=True)
            for path in self.dir.glob("*.conf"):
                path.unlink()
            for name in ("haproxy.cfg", "haproxy.sock"):
                (self.dir / name).unlink(missing_ok=True)
            say(f"cluster {state['id']} is down (logs kept in {self.logs})")
            state.clear()

    def _drop_backends(self) -> None:
        """The cluster's queues, DLM keys and database."""
        import kombu  # noqa: PLC0415 - only here
        import redis  # noqa: PLC0415
        import sqlalchemy  # noqa: PLC0415
        from sqlalchemy.pool import NullPool  # noqa: PLC0415

        state = self.state
        ident, urls = state["id"], state["urls"]
        with contextlib.suppress(Exception), kombu.Connection(urls["rabbitmq"]) as connection:
            channel = connection.channel()
            for queue in (f"cluster-{ident}", f"cluster-{ident}.start", f"cluster-{ident}.dead"):
                channel.queue_delete(queue)
        with contextlib.suppress(Exception):
            client = redis.Redis.from_url(urls["redis"], socket_timeout=5)
            for key in client.scan_iter(match=f"inspector-cluster-{ident}_*"):
                client.delete(key)
            client.close()
        if "database" in state:
            admin = sqlalchemy.create_engine(
                urls["postgresql"], poolclass=NullPool, isolation_level="AUTOCOMMIT"
            )
            with admin.connect() as connection:
                drop = f'DROP DATABASE IF EXISTS "{state["database"]}" WITH (FORCE)'
                connection.execute(sqlalchemy.text(drop))
            admin.dispose()

    # ------------------------------------------------------------ status

    def report(self) -> tuple[int, str]:
        """(0 when everything runs and every back end is UP, else 1; the text)."""
        state = self.load()
        if not state:
            return 3, f"no cluster in {self.dir}"
        servers, pxe = self.servers(), self.pxe()
        lines = [
            f"cluster {state['id']} in {self.dir}, release {state.get('release')}",
            f"API (HAProxy): {self.url}   stats socket: {self.stats_socket}",
            "",
            f"{'process':<9} {'pid':>7} {'state':<5} {'release':<7} {'starts':>6}  details",
        ]
        healthy = True
        for name in process_names():
            info = state.get("processes", {}).get(name, {})
            alive = self.alive(name)
            details = ""
            if name.startswith("api-"):
                row = servers.get(name, {})
                details = f"HAProxy {row.get('status', '?')}, {row.get('scur', '?')} sessions"
                healthy = healthy and row.get("status") == "UP"
            elif name.startswith("worker-"):
                index = int(name.split("-")[1])
                dnsmasq = is_ours(self.dnsmasq_pid(index), str(self.dir))
                details = (
                    f"host{index} ({self.namespace(index)}, {SUBNET}.{index}), "
                    f"dnsmasq {'alive' if dnsmasq else 'dead'}, PXE {pxe[index]}"
                )
            healthy = healthy and alive
            lines.append(
                f"{name:<9} {info.get('pid', '-')!s:>7} {'alive' if alive else 'dead':<5} "
                f"{info.get('release', '') or '-':<7} {info.get('starts', 0):>6}  {details}"
            )
        lines.append(f"\nlogs: {self.logs}/")
        if any(self.alive(f"worker-{i}") for i in range(1, HOSTS + 1)):
            # Its exit status ORs its collectors' codes (0 ok, 1 being fixed, 2 unknown,
            # 4 needs an operator): shown, whatever it is.
            result = self.inspector("status", "--wait", "2", timeout=30)
            if result.stdout.strip():
                lines += ["", f"$ inspector status  (exit {result.returncode})"]
                lines.append(result.stdout.rstrip())
        return (0 if healthy else 1), "\n".join(lines)


# ---------------------------------------------------------------- command line


def _process_name(args: argparse.Namespace) -> str:
    if args.role == "haproxy":
        return "haproxy"
    limit = APIS if args.role == "api" else HOSTS
    if args.index is None or not 1 <= args.index <= limit:
        raise ClusterError(f"which {args.role}? 1 to {limit}")
    return f"{args.role}-{args.index}"


def _options(pairs: list[str]) -> dict[str, dict[str, str]]:
    options: dict[str, dict[str, str]] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        section, _, name = key.rpartition(".")
        if not (section and name and _):
            raise ClusterError(f"--set {pair}: SECTION.OPTION=VALUE")
        options.setdefault(section, {})[name] = value
    return options


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scripts/cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=pathlib.Path, default=DEFAULT_DIR, help="state directory")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the cluster (idempotent)")
    up.add_argument("--port", type=int, default=DEFAULT_PORT, help="HAProxy's port; 0: any")
    up.add_argument("--set", action="append", default=[], metavar="SECTION.OPTION=VALUE")
    for command in (up, commands.add_parser("upgrade", help="rolling upgrade to a new release")):
        origin = command.add_mutually_exclusive_group()
        origin.add_argument("--source", type=pathlib.Path, help="install from this directory")
        origin.add_argument("--ref", help="install this git ref of the checkout")
    commands.add_parser("down", help="stop and remove what `up` started")
    commands.add_parser("status", help="processes, HAProxy back ends, PXE, inspector status")
    for action in ("kill", "stop", "start", "restart"):
        command = commands.add_parser(action, help=f"{action} one process")
        command.add_argument("role", choices=["api", "worker", "haproxy"])
        command.add_argument("index", type=int, nargs="?")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    cluster = Cluster(args.dir)
    try:
        if args.command == "up":
            cluster.up(args.port, source=args.source, ref=args.ref, options=_options(args.set))
            print(cluster.report()[1])
            print(
                f"\nInspector is up at {cluster.url} (scripts/cluster status, scripts/cluster down)"
            )
        elif args.command == "down":
            cluster.down()
        elif args.command == "status":
            code, text = cluster.report()
            print(text)
            return code
        elif args.command == "upgrade":
            import cluster_upgrade  # noqa: PLC0415 - scripts/ is on sys.path

            cluster_upgrade.upgrade(cluster, source=args.source, ref=args.ref)
        else:
            name = _process_name(args)
            action = {"kill": cluster.kill, "stop": cluster.stop}.get(args.command)
            if action:
                action(name)
            else:
                if args.command == "restart":
                    cluster.stop(name)
                cluster.start(name)
                cluster.wait_ready(name)
            say(f"{args.command} {name}: done")
    except ClusterError as error:
        say(f"error: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
