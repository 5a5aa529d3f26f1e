"""The deployment files are honest: etc/inspector (systemd units, dnsmasq, iPXE, sudoers,
HAProxy) and the devstack plugin name only commands, options and paths that exist.

The devstack plugin cannot run here; what it writes is checked against our options, its
render_* functions are run (bash) and their output checked by dnsmasq and HAProxy, and
the sudo rule is compared with the commands the firewall drivers really run.
"""

import dataclasses
import importlib
import importlib.util
import ipaddress
import itertools
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from inspector import conf as config
from inspector.api import wsgi
from inspector.cmd import _parser, elections, service_cmd
from inspector.firewall.commands import Runner
from inspector.firewall.drivers import DRIVERS
from inspector.firewall.ruleset import RuleSet
from tests.conftest import service_unavailable
from tests.script_modules import load_script

ROOT = pathlib.Path(__file__).parents[2]
ETC = ROOT / "etc" / "inspector"
PLUGIN = ROOT / "devstack" / "plugin.sh"
SETTINGS = ROOT / "devstack" / "settings"
SUDOERS = ETC / "sudoers.d" / "inspector"
UNITS = sorted(ETC.glob("*.service"))
CONFIG_FILE = "/etc/inspector/inspector.conf"
#: Where the units expect etc/inspector's files.
ETC_TARGET = "/etc/inspector"
WSGI_APP = "inspector.api.wsgi:application"
#: Where the Debian packages put what the units and the sudo rule run.
SEARCH_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def which(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + SEARCH_PATH)


# ---------------------------------------------------------------- the devstack plugin

INISET = re.compile(r'^\s*iniset\s+"?\$\{?INSPECTOR_CONF\}?"?\s+(\S+)\s+(\S+)(?:\s+(.*))?$')


def plugin_inisets() -> list[tuple[str, str, str]]:
    """(section, option, value as written) of every `iniset $INSPECTOR_CONF` in plugin.sh."""
    found = []
    for line in PLUGIN.read_text().splitlines():
        if re.search(r"\biniset\b.*INSPECTOR_CONF\b", line):
            match = INISET.match(line)
            assert match, f"unrecognised iniset line in plugin.sh: {line.strip()}"
            found.append((match[1], match[2], (match[3] or "").strip()))
    return found


def known_options() -> dict[str, set[str]]:
    """Section -> option names, as `inspector config sample` lists them."""
    known: dict[str, set[str]] = {}
    for group, opts in config.list_opts() + config.library_opts():
        known.setdefault(group, set()).update(opt.dest for opt in opts)
    return known


def test_plugin_writes_only_options_that_exist():
    inisets = plugin_inisets()
    assert len(inisets) >= 20
    known = known_options()
    for section, option, _value in inisets:
        assert "$" not in section + option, f"computed name in plugin.sh: [{section}] {option}"
        assert section in known, f"plugin.sh writes [{section}], which is no option group"
        assert option in known[section], f"plugin.sh writes [{section}] {option}: no such option"
    written = {(section, option) for section, option, _ in inisets}
    for needed in [
        ("DEFAULT", "auth_strategy"),
        ("database", "connection"),
        ("queue", "transport_url"),
        ("coordination", "backend_url"),
        ("pxe_filter", "driver"),
        ("pxe_filter", "root_helper"),
        ("ironic", "auth_type"),
        ("ironic", "auth_url"),
        ("oslo_middleware", "enable_proxy_headers_parsing"),
    ]:
        assert needed in written, f"plugin.sh does not set [{needed[0]}] {needed[1]}"


def test_plugin_literal_values_load(tmp_path):
    """The values plugin.sh writes as they are (not from variables) are valid."""
    sections: dict[str, dict[str, str]] = {}
    for section, option, value in plugin_inisets():
        if "$" not in value:
            # One shell word (iniset's value), unquoted as bash would.
            (word,) = shlex.split(value)
            sections.setdefault(section, {})[option] = word
    assert sections["pxe_filter"]["root_helper"] == "sudo -n"
    path = tmp_path / "inspector.conf"
    path.write_text(
        "".join(
            f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in options.items())
            for section, options in sections.items()
        )
    )
    conf = config.load(["--config-file", str(path)])
    assert conf.processing.store_data == "database"
    assert conf.oslo_middleware.enable_proxy_headers_parsing is True


def test_plugin_pxe_filter_choices_are_drivers():
    text = SETTINGS.read_text()
    match = re.search(r"\[pxe_filter\] driver: ([a-z, ]+) or ([a-z]+)\.", text)
    assert match, "devstack/settings no longer lists the [pxe_filter] drivers"
    names = [n.strip() for n in match[1].split(",")] + [match[2]]
    assert set(names) == set(DRIVERS), names
    default = re.search(r"INSPECTOR_PXE_FILTER=\$\{INSPECTOR_PXE_FILTER:-(\w+)\}", text)
    assert default and default[1] in DRIVERS


def inspector_commands(text: str) -> list[list[str]]:
    """`inspector ...` command lines: the arguments after the program."""
    commands = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        for match in re.finditer(r'(?:^|[\s"=])\S*/inspector"? ((?:[a-z]+ ?)+)', line):
            commands.append(match[1].split())
    return commands


def assert_is_inspector_command(argv: list[str]) -> None:
    try:
        args, rest = _parser().parse_known_args(argv)
    except SystemExit as exc:
        raise AssertionError(f"`inspector {' '.join(argv)}` is not an inspector command") from exc
    assert args.run is not None
    assert set(rest) <= {"--config-file", CONFIG_FILE}, f"unexpected arguments {rest}"


def test_plugin_runs_real_inspector_commands():
    commands = inspector_commands(PLUGIN.read_text())
    assert ["worker"] in commands
    assert ["config", "check"] in commands
    assert ["db", "upgrade"] in commands
    for argv in commands:
        assert_is_inspector_command(argv)
    assert WSGI_APP in PLUGIN.read_text()


def render_with_plugin(tmp_path, filter_driver: str = "dnsmasq") -> pathlib.Path:
    """Run the plugin's render_* functions (bash) on the files in etc/inspector."""
    bash = which("bash")
    if bash is None:
        service_unavailable("bash is not installed")
    out = tmp_path / "rendered"
    out.mkdir()
    variables = {
        "INSPECTOR_INTERFACE": "br-inspector",
        "INSPECTOR_DHCP_RANGE": "172.24.42.100,172.24.42.149,255.255.255.0,30m",
        "INSPECTOR_DATA_DIR": str(tmp_path / "data"),
        "INSPECTOR_DHCP_HOSTSDIR": str(tmp_path / "data" / "dhcp-hostsdir"),
        "INSPECTOR_PXE_FILTER": filter_driver,
        "IRONIC_TFTPSERVER_IP": "10.0.0.5",
        "IRONIC_HTTP_SERVER": "10.0.0.5",
        "IRONIC_HTTP_PORT": "3928",
        "INSPECTOR_URI": "http://10.0.0.5:5050",
        "INSPECTOR_RAMDISK_COLLECTORS": "default,logs",
        "INSPECTOR_EXTRA_KERNEL_CMDLINE": "ipa-insecure=1 console=ttyS0",
        "INSPECTOR_API_HOSTS": "10.0.0.5 10.0.0.6",
        "INSPECTOR_API_PORT_BASE": "5050",
        "INSPECTOR_API_WORKERS": "3",
        "INSPECTOR_SERVICE_HOST": "10.0.0.5",
        "INSPECTOR_SERVICE_PORT": "5050",
    }
    script = "\n".join(
        [
            "set -euo pipefail",
            f"source {shlex.quote(str(PLUGIN))}",
            *(f"{name}={shlex.quote(value)}" for name, value in variables.items()),
            f"render_inspector_dnsmasq_conf {ETC}/dnsmasq.conf {out}/dnsmasq.conf",
            f"render_inspector_ipxe {ETC}/inspector.ipxe {out}/inspector.ipxe",
            f"render_inspector_haproxy_cfg {ETC}/haproxy.cfg {out}/haproxy.cfg",
        ]
    )
    result = subprocess.run(
        [bash, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.mark.parametrize("filter_driver", ["dnsmasq", "nftables"])
def test_plugin_renders_dnsmasq_conf(tmp_path, filter_driver):
    out = render_with_plugin(tmp_path, filter_driver)
    text = (out / "dnsmasq.conf").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert "interface=br-inspector" in lines
    assert "dhcp-range=172.24.42.100,172.24.42.149,255.255.255.0,30m" in lines
    assert "dhcp-sequential-ip" in lines
    assert "dhcp-boot=tag:ipxe,http://10.0.0.5:3928/inspector.ipxe" in lines
    assert "enable-tftp" not in lines  # devstack's Ironic serves TFTP
    hostsdir = f"dhcp-hostsdir={tmp_path / 'data' / 'dhcp-hostsdir'}"
    if filter_driver == "dnsmasq":
        assert hostsdir in lines
        assert "dhcp-ignore=tag:!known" in lines
    else:
        assert not any(line.startswith(("dhcp-hostsdir", "dhcp-ignore")) for line in lines)
    dnsmasq_test(out / "dnsmasq.conf")


def test_plugin_renders_ipxe_and_haproxy(tmp_path):
    out = render_with_plugin(tmp_path)
    ipxe = (out / "inspector.ipxe").read_text()
    assert ipxe.startswith("#!ipxe\n")
    assert "ipa-inspection-callback-url=http://10.0.0.5:5050/v1/continue " in ipxe
    assert "kernel http://10.0.0.5:3928/inspector-agent.kernel " in ipxe
    assert "initrd http://10.0.0.5:3928/inspector-agent.initramfs" in ipxe
    assert ipxe.rstrip().endswith("boot")

    haproxy = (out / "haproxy.cfg").read_text()
    live = [line.strip() for line in haproxy.splitlines() if not line.strip().startswith("#")]
    assert [line for line in live if line.startswith("bind ")] == ["bind 10.0.0.5:5050"]
    servers = [line for line in live if line.startswith("server ")]
    assert servers == [
        f"server api-{i + 1} {host}:{port} check"
        for i, (host, port) in enumerate(
            (host, port) for host in ("10.0.0.5", "10.0.0.6") for port in (5051, 5052, 5053)
        )
    ]
    assert not any(line.split()[0] in ("user", "group", "daemon") for line in live if line)
    assert "option httpchk GET /healthcheck" in live
    haproxy_check(out / "haproxy.cfg")


# ---------------------------------------------------------------- systemd units


@dataclasses.dataclass
class Unit:
    path: pathlib.Path
    sections: dict[str, list[tuple[str, str]]]

    def values(self, section: str, key: str) -> list[str]:
        return [v for k, v in self.sections.get(section, []) if k == key]

    def value(self, section: str, key: str) -> str:
        values = self.values(section, key)
        assert len(values) == 1, f"{self.path.name}: [{section}] {key} = {values}"
        return values[0]


def read_unit(path: pathlib.Path) -> Unit:
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith(("#", ";")):
            continue
        assert not line.endswith("\\"), f"{path.name}: keep each setting on one line"
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), [])
            continue
        key, _, value = line.partition("=")
        assert current is not None and _, f"{path.name}: {line}"
        current.append((key.strip(), value.strip()))
    return Unit(path, sections)


def test_units_exist():
    names = {path.name for path in UNITS}
    assert {"inspector-api.service", "inspector-worker.service"} <= names
    assert (ETC / "inspector.target").exists()


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_unit_commands_are_real(path):
    unit = read_unit(path)
    assert unit.values("Service", "ExecStart"), f"{path.name} has no ExecStart"
    for key in ("ExecStartPre", "ExecStart", "ExecStopPost"):
        for command in unit.values("Service", key):
            argv = shlex.split(command.lstrip("-+!@:"))
            program = pathlib.PurePath(argv[0]).name
            assert argv[0].startswith("/"), f"{path.name}: {key} needs an absolute path"
            if program == "inspector":
                assert "upgrade" not in argv, "migrations are a deployment step, not ExecStart*"
                assert_is_inspector_command(argv[1:])
            elif program == "gunicorn":
                assert_is_gunicorn_command(argv[1:])
            elif program == "dnsmasq":
                assert f"--conf-file={ETC_TARGET}/dnsmasq.conf" in argv
            elif key == "ExecStart":
                raise AssertionError(f"{path.name}: ExecStart runs {argv[0]}")
    if "dnsmasq" not in path.name:
        assert unit.value("Service", "User") == "inspector"


def assert_is_gunicorn_command(args: list[str]) -> None:
    gunicorn_config = pytest.importorskip("gunicorn.config")
    parsed = gunicorn_config.Config().parser().parse_args(args)
    assert parsed.args == [WSGI_APP], parsed.args
    module, _, attribute = WSGI_APP.partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))
    assert int(parsed.workers) >= 1
    # Concurrent requests per process (the configuration bench/api.py measures).
    assert parsed.worker_class == "gthread"
    assert int(parsed.threads) > 1


def test_api_unit():
    unit = read_unit(ETC / "inspector-api.service")
    environment = unit.value("Service", "Environment")
    assert environment == f"INSPECTOR_CONFIG_FILES={CONFIG_FILE}"
    assert wsgi.config_args({"INSPECTOR_CONFIG_FILES": CONFIG_FILE}) == [
        "--config-file",
        CONFIG_FILE,
    ]
    assert wsgi.DEFAULT_CONFIG_FILE == CONFIG_FILE
    assert unit.value("Service", "ExecStartPre").endswith(
        f"inspector config check --role api --config-file {CONFIG_FILE}"
    )
    # The address it binds is one of HAProxy's back ends.
    bind = re.search(r"--bind (\S+)", unit.value("Service", "ExecStart"))
    haproxy = (ETC / "haproxy.cfg").read_text()
    assert bind and re.search(rf"^\s+server \S+ {re.escape(bind[1])} check$", haproxy, re.M)


def test_worker_unit():
    unit = read_unit(ETC / "inspector-worker.service")
    assert unit.value("Service", "ExecStartPre").endswith(
        f"inspector config check --role worker --config-file {CONFIG_FILE}"
    )
    assert unit.value("Service", "Restart") == "always"
    assert unit.value("Unit", "StartLimitIntervalSec") == "0"
    assert unit.value("Service", "KillSignal") == "SIGTERM"
    # Long enough for the pool to finish (get_timeout + the task bound), then the
    # elections to leave, on the default settings.
    conf = config.load([])
    needed = (
        conf.worker.get_timeout
        + service_cmd.TASK_BOUND
        + conf.coordination.lease_timeout
        + elections.JOIN_BOUND
    )
    assert float(unit.value("Service", "TimeoutStopSec")) >= needed
    # Closing the firewall after the worker, however it stopped: a line to enable, or
    # enabled (then test_unit_commands_are_real checks the command).
    stop_post = [
        *unit.values("Service", "ExecStopPost"),
        *re.findall(r"^# (?:ExecStopPost)=(.*)$", unit.path.read_text(), re.M),
    ]
    assert any("/opt/inspector/bin/inspector firewall close" in command for command in stop_post)
    # The hostsdir the dnsmasq driver writes is this unit's runtime directory.
    assert "inspector/dhcp-hostsdir" in unit.value("Service", "RuntimeDirectory").split()
    assert "dhcp-hostsdir=/run/inspector/dhcp-hostsdir" in (ETC / "dnsmasq.conf").read_text()


@pytest.mark.parametrize("name", ["inspector-worker.service", "inspector-pxe-filter.service"])
def test_firewall_units_are_watched_as_the_options_say(name):
    """systemd's watchdog kills a frozen firewall process no later than other hosts
    count on ([pxe_filter] watchdog_timeout: a new dnsmasq leader waits it), with
    SIGKILL (a core dump would delay the close)."""
    unit = read_unit(ETC / name)
    assert unit.value("Service", "Type") == "notify"
    assert unit.value("Service", "NotifyAccess") == "main"
    watchdog = unit.value("Service", "WatchdogSec")
    assert watchdog.endswith("s") and float(watchdog[:-1]) > 0
    assert float(watchdog[:-1]) == config.load([]).pxe_filter.watchdog_timeout
    assert unit.value("Service", "WatchdogSignal") == "SIGKILL"


def test_dnsmasq_unit_is_bound_to_the_worker():
    unit = read_unit(ETC / "inspector-dnsmasq.service")
    assert unit.value("Unit", "BindsTo") == "inspector-worker.service"
    assert "inspector-worker.service" in unit.value("Unit", "After").split()


def test_units_verify(tmp_path):
    """systemd's own check, with the binaries of this virtualenv in place of /usr/bin."""
    analyze = which("systemd-analyze")
    if analyze is None:
        service_unavailable("systemd-analyze is not installed (scripts/test installs systemd)")
    bindir = pathlib.Path(sys.executable).parent
    if not (bindir / "gunicorn").exists() or which("dnsmasq") is None:
        service_unavailable("gunicorn or dnsmasq is not installed (scripts/test installs both)")
    paths = []
    for path in [*UNITS, ETC / "inspector.target"]:
        text = path.read_text()
        text = text.replace("/opt/inspector/bin/inspector", str(bindir / "inspector"))
        text = text.replace("/opt/inspector/bin/gunicorn", str(bindir / "gunicorn"))
        text = text.replace("/usr/sbin/dnsmasq", which("dnsmasq"))
        (tmp_path / path.name).write_text(text)
        paths.append(f"./{path.name}")
    result = subprocess.run(
        [analyze, "verify", *paths],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stdout + result.stderr


# ---------------------------------------------------------------- dnsmasq, iPXE, HAProxy


def dnsmasq_test(path: pathlib.Path) -> None:
    binary = which("dnsmasq")
    if binary is None:
        return
    result = subprocess.run(
        [binary, "--test", f"--conf-file={path}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def haproxy_check(path: pathlib.Path) -> None:
    binary = which("haproxy")
    if binary is None:
        return
    result = subprocess.run(
        [binary, "-c", "-f", str(path)], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dnsmasq_conf():
    path = ETC / "dnsmasq.conf"
    text = path.read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for needed in ("port=0", "dhcp-sequential-ip", "dhcp-ignore=tag:!known", "enable-tftp"):
        assert needed in lines
    assert "dhcp-boot=tag:ipxe,inspector.ipxe" in lines
    # Disjoint pools: the comment's three hosts, the first one active.
    pools = re.findall(r"#\s+host (\d): dhcp-range=([\d.]+),([\d.]+),", text)
    assert [host for host, _, _ in pools] == ["1", "2", "3"]
    ranges = [(ipaddress.ip_address(a), ipaddress.ip_address(b)) for _, a, b in pools]
    for (start, end), (next_start, _) in itertools.pairwise(ranges):
        assert start <= end < next_start
    active = [line for line in lines if line.startswith("dhcp-range=")]
    assert len(active) == 1
    assert active[0].removeprefix("dhcp-range=").split(",")[:2] == [str(a) for a in ranges[0]]
    dnsmasq_test(path)


def test_ipxe_script_calls_back_through_the_load_balancer():
    text = (ETC / "inspector.ipxe").read_text()
    assert text.startswith("#!ipxe\n")
    callback = re.search(r"ipa-inspection-callback-url=(\S+)", text)
    assert callback and callback[1].endswith("/v1/continue")
    # The floating IP HAProxy binds on the provisioning network.
    address = callback[1].split("//", 1)[1].split("/", 1)[0]
    assert f"bind {address}" in (ETC / "haproxy.cfg").read_text()


#: The lines that make a request whose back end died answered by another, with one id
#: on all its attempts (docs/api.md, "Behind a load balancer").
RETRY_LINES = re.compile(
    r"^\s+((?:retry-on|retries|option redispatch|option http-buffer-request|unique-id-format"
    r"|http-request (?:set-header X-Request-ID|capture unique-id|disable-l7-retry))\b.*)$",
    re.M,
)


def cluster_haproxy_cfg() -> str:
    """The HAProxy configuration scripts/cluster.py writes, for one server."""
    module = load_script("cluster")
    server = "    server api-1 127.0.0.1:5051 check"
    return module.HAPROXY_CONFIG.format(socket="/run/haproxy.sock", port=5050, servers=server)


def test_haproxy_cfg_retries_what_a_dead_back_end_dropped(tmp_path):
    shipped = RETRY_LINES.findall((ETC / "haproxy.cfg").read_text())
    assert "retry-on conn-failure empty-response response-timeout" in shipped
    assert "http-request set-header X-Request-ID %[unique-id]" in shipped
    assert "option http-buffer-request" in shipped  # else a POST's body may not be retried
    assert "http-request disable-l7-retry if METH_POST { path_beg /v1/rules }" in shipped
    # The local cluster's HAProxy (scripts/cluster.py) does the same.
    cluster = tmp_path / "haproxy.cfg"
    cluster.write_text(cluster_haproxy_cfg())
    assert sorted(RETRY_LINES.findall(cluster.read_text())) == sorted(shipped)
    haproxy_check(cluster)


def test_haproxy_cfg_checks_health():
    text = (ETC / "haproxy.cfg").read_text()
    assert "option httpchk GET /healthcheck" in text
    assert "http-check expect status 200" in text
    servers = re.findall(r"^\s+server (\S+) \S+ (.*)$", text, re.M)
    assert len(servers) >= 2
    assert all("check" in options.split() for _, options in servers)
    haproxy_check(ETC / "haproxy.cfg")


# ---------------------------------------------------------------- sudo


def sudoers_aliases() -> tuple[dict[str, set[str]], list[str]]:
    """Cmnd_Alias name -> commands (unescaped), and the user rules."""
    logical, pending = [], ""
    for raw in SUDOERS.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the sudoers file ends with a continuation"
    aliases, rules = {}, []
    for line in logical:
        if line.startswith("Defaults"):
            continue
        match = re.fullmatch(r"Cmnd_Alias ([A-Z0-9_]+) = (.*)", line)
        if match:
            commands = re.split(r"(?<!\\),", match[2])
            aliases[match[1]] = {
                re.sub(r"\s+", " ", c.strip().replace("\\:", ":").replace("\\,", ","))
                for c in commands
            }
        else:
            rules.append(line)
    return aliases, rules


def test_sudoers_syntax():
    aliases, rules = sudoers_aliases()
    assert rules == ["inspector ALL=(root) NOPASSWD: INSPECTOR_DNSMASQ"]
    for rule in rules:
        granted = rule.split("NOPASSWD:", 1)[1]
        assert {name.strip() for name in granted.split(",")} <= set(aliases)
    visudo = which("visudo")
    if visudo is None:
        return
    result = subprocess.run(
        [visudo, "-c", "-f", str(SUDOERS)], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@dataclasses.dataclass(frozen=True)
class RecordingRunner(Runner):
    """Runs nothing; remembers each command line (what sudo would be asked to run)."""

    calls: list = dataclasses.field(default_factory=list)

    def run(self, argv, *, stdin=None, check=True):
        self.calls.append(tuple(argv))
        return subprocess.CompletedProcess(list(argv), 0, stdout="", stderr="")


def driver_commands(
    name: str, tmp_path, ip_version: str = "4", backend: str = "auto"
) -> set[tuple[str, str]]:
    """(program, arguments) of every command the driver runs: check, a first apply, a
    patch, an apply without change, close and remove, with the sample's settings."""
    conf = config.load([])
    conf.set_override("ip_version", ip_version, group="iptables")
    conf.set_override("backend", backend, group="iptables")
    conf.set_override("dhcp_hostsdir", str(tmp_path / "hostsdir"), group="dnsmasq_pxe_filter")
    conf.set_override(
        "dnsmasq_start_command", "systemctl start inspector-dnsmasq", group="dnsmasq_pxe_filter"
    )
    conf.set_override(
        "dnsmasq_stop_command", "systemctl stop inspector-dnsmasq", group="dnsmasq_pxe_filter"
    )
    runner = RecordingRunner()
    driver = DRIVERS[name].from_conf(conf, runner)
    first = RuleSet(
        whitelist=frozenset({"52:54:00:00:00:01"}),
        blacklist=frozenset({"52:54:00:00:00:02", "52:54:00:00:00:03"}),
        open=True,
        deny_unknown=False,
    )
    second = RuleSet(
        whitelist=frozenset({"52:54:00:00:00:04"}),
        blacklist=frozenset({"52:54:00:00:00:02"}),
        open=True,
        deny_unknown=True,
    )
    driver.check()
    driver.apply(first)
    driver.apply(second)
    driver.apply(second)
    driver.close()
    driver.remove()
    return {(argv[0], " ".join(argv[1:])) for argv in runner.calls}


def test_sudoers_allows_exactly_what_the_drivers_run(tmp_path):
    aliases, _ = sudoers_aliases()
    runs = {
        "INSPECTOR_DNSMASQ": driver_commands("dnsmasq", tmp_path),
        "INSPECTOR_NFTABLES": driver_commands("nftables", tmp_path),
        "INSPECTOR_IPTABLES": driver_commands("iptables", tmp_path),
        "INSPECTOR_IP6TABLES": driver_commands("iptables", tmp_path, ip_version="6"),
        "INSPECTOR_IPTABLES_LEGACY": driver_commands("iptables", tmp_path, backend="legacy"),
    }
    runs["INSPECTOR_IPSET"] = driver_commands("ipset", tmp_path) - runs["INSPECTOR_IPTABLES"]
    assert set(aliases) == set(runs)
    for alias, commands in runs.items():
        allowed = set()
        for entry in aliases[alias]:
            path, _, arguments = entry.partition(" ")
            program = pathlib.PurePath(path).name
            installed = which(program)
            if installed:  # the rule names the binary sudo will find
                assert os.path.realpath(path) == os.path.realpath(installed), entry
            allowed.add((program, arguments))
        assert commands == allowed, (
            f"{alias}: the driver runs {sorted(commands - allowed)} which the rule does "
            f"not allow, and the rule allows {sorted(allowed - commands)} which it never runs"
        )


# ---------------------------------------------------------------- docs/deployment.md


def test_deployment_doc_configuration_is_valid(tmp_path):
    text = (ROOT / "docs" / "deployment.md").read_text()
    # The first: the cluster's inspector.conf (the PXE filter's comes later).
    block = re.findall(r"```ini\n(.*?)```", text, re.S)[0]
    known = known_options()
    section = None
    for line in block.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
            assert section in known, section
        elif line and not line.startswith("#"):
            option = line.split("=", 1)[0].strip()
            assert option in known[section], f"[{section}] {option}"
    path = tmp_path / "inspector.conf"
    path.write_text(block)
    conf = config.load(["--config-file", str(path)])
    assert conf.pxe_filter.driver == "dnsmasq"
    # The example matches the units and the sudo rule.
    unit = (ETC / "inspector-worker.service").read_text()
    assert conf.dnsmasq_pxe_filter.dhcp_hostsdir.removeprefix("/run/") in unit
    aliases, _ = sudoers_aliases()
    for command in (
        conf.dnsmasq_pxe_filter.dnsmasq_start_command,
        conf.dnsmasq_pxe_filter.dnsmasq_stop_command,
    ):
        assert f"/usr/bin/{command}" in aliases["INSPECTOR_DNSMASQ"]
