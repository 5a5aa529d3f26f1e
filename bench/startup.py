"""Start-up: each command against a bare interpreter, and a worker and a PXE filter until ready.

    scripts/services start postgresql rabbitmq redis ironic; eval "$(scripts/services env)"
    .venv/bin/python bench/startup.py [--runs 11] [--services-runs 5]
        [--out bench/results/startup.json] [--no-doc]

Commands: each run starts every command once, in turns (so that another user's load
falls on all of them alike), as the console script systemd runs (.venv/bin/inspector),
and takes its wall time and its CPU (user + system, from wait4), the package's
bytecode written first (`compile_package`), as installed; the medians of --runs
are compared with the same interpreter's `python -c pass`, which pays the same site
start-up (the editable install's finder included). The commands: `--version`, `status
--help`, `firewall close` (dnsmasq driver, a scratch hostsdir), `config check --role
worker` (its unit's ExecStartPre=), `config check` (every role, the API's keystone check
included) and `status --wait 0` on the embedded SQLite database (no network: the
database read, the collectors). Targets: every command under 10x the bare interpreter;
`firewall close` under 0.2 s of CPU.

Services (needs PostgreSQL, RabbitMQ, Redis and Ironic: INSPECTOR_TEST_*_URL as
`scripts/services env` prints them): from the process's start to ready, --services-runs
times, each on its own queue and DLM namespace:
- `inspector worker` (PostgreSQL, RabbitMQ queue and firewall channel, Redis DLM, Ironic,
  the dnsmasq driver): ready when it logs the first request it took, one that waited on
  the queue before it started (for a node the store does not have: "later");
- `inspector pxe-filter` (whitelist from Ironic, Redis DLM, dnsmasq driver), the only
  host: closed when its first state is applied, ready when it leads the firewall (it
  opens the PXE service after the dnsmasq driver's take-over wait, reported apart).
Target: ready within 2 s on an idle machine. Results go to JSON and to
docs/performance.md,
the plot to docs/images/startup.png (`--plot-only` draws both again from the JSON).
"""

import argparse
import os
import pathlib
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import plots  # noqa: E402
from bench.worker import delete_queues, env, fresh_database, tooz_url  # noqa: E402
from inspector.broker.message import Request  # noqa: E402
from inspector.broker.queue import WorkQueue  # noqa: E402

INSPECTOR = str(pathlib.Path(sys.executable).parent / "inspector")
#: Ratio to the bare interpreter each command's median wall time stays under.
TARGET_RATIO = 10.0
#: Commands with a target (the others are measured, not held to it).
TARGETED = (
    "--version",
    "status --help",
    "firewall close",
    "config check --role worker",
    "config check",
    "status --wait 0",
)
TARGET_CLOSE_CPU = 0.2
TARGET_READY = 2.0
DEADLINE = 60.0  # seconds a service may take to be ready before the bench gives up


def rusage_run(argv):
    """(wall seconds, CPU seconds, exit status) of one run of argv, its output discarded."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, process.returncode


def commands(directory):
    """name -> argv of every command timed, with the files they read under directory."""
    hostsdir = directory / "hostsdir"
    hostsdir.mkdir()
    close = directory / "close.conf"
    close.write_text(
        f"[pxe_filter]\ndriver = dnsmasq\n[dnsmasq_pxe_filter]\ndhcp_hostsdir = {hostsdir}\n"
    )
    worker = directory / "worker.conf"
    worker.write_text(
        f"[DEFAULT]\nstate_path = {directory}\n[queue]\ntransport_url = redis://127.0.0.1:1/0\n"
        "[coordination]\nbackend_url = redis://127.0.0.1:1\n"
    )
    embedded = directory / "embedded.conf"
    embedded.write_text(f"[DEFAULT]\nstate_path = {directory}\n")
    subprocess.run([INSPECTOR, "db", "upgrade", "--config-file", str(embedded)], check=True)
    return {
        "bare interpreter": [sys.executable, "-c", "pass"],
        "--version": [INSPECTOR, "--version"],
        "status --help": [INSPECTOR, "status", "--help"],
        "firewall close": [INSPECTOR, "firewall", "close", "--config-file", str(close)],
        "config check --role worker": [
            *(INSPECTOR, "config", "check", "--role", "worker", "--config-file", str(worker))
        ],
        "config check": [INSPECTOR, "config", "check", "--config-file", str(worker)],
        "status --wait 0": [INSPECTOR, "status", "--wait", "0", "--config-file", str(embedded)],
    }


def compile_package():
    """Write the bytecode of the package's modules, as an installed package has it (pip
    compiles it; its libraries' is there already): else, where PYTHONDONTWRITEBYTECODE is
    set, every start would compile the modules it imports again (30 ms of `status`)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, "-m", "compileall", "-q", str(ROOT / "inspector")]
    subprocess.run(argv, cwd=ROOT, env=environment, check=True)


def time_commands(runs):
    """Medians of wall and CPU seconds per command, and their ratios to the bare one."""
    with tempfile.TemporaryDirectory() as scratch:
        argvs = commands(pathlib.Path(scratch))
        samples = {name: [] for name in argvs}
        for _ in range(runs):
            for name, argv in argvs.items():
                samples[name].append(rusage_run(argv))
    results = {}
    for name, runs_ in samples.items():
        results[name] = {
            "wall_s": statistics.median(wall for wall, _cpu, _status in runs_),
            "cpu_s": statistics.median(cpu for _wall, cpu, _status in runs_),
            "exit_statuses": sorted({status for _wall, _cpu, status in runs_}),
        }
    bare = results["bare interpreter"]
    for entry in results.values():
        entry["wall_ratio"] = entry["wall_s"] / bare["wall_s"]
        entry["cpu_ratio"] = entry["cpu_s"] / bare["cpu_s"]
    return results


class Process:
    """A service started now, each line of its output timestamped as it comes."""

    def __init__(self, argv):
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.put((time.monotonic() - self.started, line))
        self.lines.put((None, None))

    def until(self, text):
        """Seconds from the start to the first line containing text."""
        deadline = time.monotonic() + DEADLINE
        for at, line in self.seen:
            if text in line:
                return at
        while True:
            at, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                raise SystemExit(f"the service exited before {text!r}:\n{self.output()}")
            self.seen.append((at, line))
            if text in line:
                return at

    def output(self):
        return "".join(line for _at, line in self.seen)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def service_config(directory, sections):
    path = directory / f"{uuid.uuid4().hex[:8]}.conf"
    text = f"[DEFAULT]\nstate_path = {directory}\n"
    for group, options in sections.items():
        text += f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in options.items())
    path.write_text(text)
    return path


def common_sections(directory, redis_url, ironic_url):
    hostsdir = directory / f"hostsdir-{uuid.uuid4().hex[:8]}"
    hostsdir.mkdir()
    namespace = f"bench-startup-{uuid.uuid4().hex[:8]}"
    return {
        "coordination": {"backend_url": f"{tooz_url(redis_url)}&namespace={namespace}"},
        "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
        "pxe_filter": {"driver": "dnsmasq"},
        "dnsmasq_pxe_filter": {"dhcp_hostsdir": hostsdir},
    }


def worker_ready(directory, database_url, rabbitmq_url, redis_url, ironic_url):
    """Seconds until the pool started and until it took a request waiting before it."""
    name = f"bench-startup-{uuid.uuid4().hex[:8]}"
    sections = common_sections(directory, redis_url, ironic_url)
    sections["database"] = {"connection": database_url}
    sections["queue"] = {"transport_url": rabbitmq_url, "queue_name": name}
    channel = "rabbit://" + rabbitmq_url.partition("://")[2].rstrip("/") + "/"
    sections["firewall"] = {"channel_url": channel}
    work = WorkQueue(rabbitmq_url, name)
    request = Request(node_uuid=str(uuid.uuid4()), event="continue")
    try:
        work.put(request)
        process = Process(
            [INSPECTOR, "worker", "--config-file", str(service_config(directory, sections))]
        )
        try:
            return {
                "pool_started_s": process.until("Worker pool of"),
                "ready_s": process.until(f"req {request.request_id}"),
            }
        finally:
            process.stop()
    finally:
        work.close()
        delete_queues(rabbitmq_url, name)


def pxe_filter_ready(directory, redis_url, ironic_url):
    """Seconds until its first state was applied (closed), until it led the firewall, and
    until it opened the PXE service (after the dnsmasq driver's take-over wait), alone."""
    sections = common_sections(directory, redis_url, ironic_url)
    sections["pxe_filter"]["whitelist_source"] = "ironic"
    argv = [INSPECTOR, "pxe-filter", "--config-file", str(service_config(directory, sections))]
    process = Process(argv)
    try:
        return {
            "closed_s": process.until("PXE service closed"),
            "ready_s": process.until("Elected firewall leader"),
            "opened_s": process.until("PXE service opened"),
        }
    finally:
        process.stop()


def time_services(runs):
    admin = env("INSPECTOR_TEST_POSTGRESQL_URL")
    rabbitmq_url = env("INSPECTOR_TEST_RABBITMQ_URL")
    redis_url = env("INSPECTOR_TEST_REDIS_URL")
    ironic_url = env("INSPECTOR_TEST_IRONIC_URL")
    samples = {"worker": [], "pxe-filter": []}
    with fresh_database(admin) as database_url, tempfile.TemporaryDirectory() as scratch:
        directory = pathlib.Path(scratch)
        for _ in range(runs):
            samples["worker"].append(
                worker_ready(directory, database_url, rabbitmq_url, redis_url, ironic_url)
            )
            samples["pxe-filter"].append(pxe_filter_ready(directory, redis_url, ironic_url))
    return {
        name: {key: statistics.median(run[key] for run in runs_) for key in runs_[0]}
        | {"max_ready_s": max(run["ready_s"] for run in runs_), "runs": runs_}
        for name, runs_ in samples.items()
    }


#: What the figures come from (docs/development.md, "Keep commands fast").
NOTES = [
    "- Before, every command imported the whole package: on this machine, idle, "
    "`--version` and `firewall close` each took about 1.65 s (1.6 s of CPU), 69x the bare "
    "interpreter.",
    "- `--version` and `--help` import the standard library only (the command line, "
    "`inspector/cmd/arguments.py`); each command's module is imported when it runs.",
    "- `firewall close` imports oslo.config (about 80 ms of CPU of what it adds to the "
    "bare interpreter), its three option groups and the firewall drivers, and writes the "
    "closed files at once; oslo.config stays, so that it reads the same files, "
    "directories, environment and old names as every command.",
    "- `config check` imports oslo.config and oslo.log (its formatters: the logging set-up "
    "is one of the checks) and checks the rest from tables and declarations: kombu's "
    "transports and tooz's drivers by URL scheme, keystoneauth's options of `[ironic]` and "
    "`[keystone_authtoken]` as `inspector.conf.keystoneauth` declares them (equal to the "
    "library's: a unit test compares them). keystoneauth and keystonemiddleware are "
    "imported only to load the auth plugin an `auth_type` names. Before: 283 ms "
    "(`--role worker`, keystoneauth with requests, kombu) and 577 ms (every role: Flask "
    "and keystonemiddleware for the API's keystone check), 11.0x and 22.4x.",
    "- `status` reads a SQLite database (the embedded one) with sqlite3, read-only, in four "
    "SELECTs (`inspector/cmd/status_read.py`); another database, or a failed read, goes "
    "through the store (SQLAlchemy, about 0.5 s of CPU with the store's modules), as "
    "before. The queue (kombu), the channel (oslo.messaging) and the DLM (tooz) are "
    "imported only when the configuration has them to ask: the embedded set-up's are "
    "in-process. Before: 821 ms, 31.9x.",
    "- The package's bytecode is written before the runs, as an installed package has "
    "it: this environment sets PYTHONDONTWRITEBYTECODE, so without that every start "
    "compiles the modules it imports again (about 30 ms of CPU for `status` and "
    "`config check`, about 0.1 s for a worker); the runs on 97f2782 and before were "
    "measured so.",
    "- A worker's start is its imports (about 1.2 s of CPU: the store, the DLM, the queue, "
    "the processing, Ironic's client), then a few tens of milliseconds to connect; its pool "
    "takes work once its firewall listens (the first firewall host's 2.5 s wait for the "
    "announcers holds only its election). `inspector pxe-filter` imports neither the store "
    "nor the worker (about 0.6 s of CPU) unless `whitelist_source = inspector`.",
]


def load_average():
    return os.getloadavg()[0]


def row(name, entry, milestone):
    met = "met" if entry["ready_s"] < TARGET_READY else "missed"
    return (
        f"| {name} | {entry[milestone]:.2f} | {entry['ready_s']:.2f} | "
        f"{entry['max_ready_s']:.2f} | {met} |"
    )


def markdown(results):
    machine = results["machine"]
    lines = [
        "## Start-up (`bench/startup.py`)",
        "",
        f"Machine: {machine['cpus']} CPUs, Python {machine['python']}; 1-minute load average "
        f"{machine['load_before']:.2f} before, {machine['load_after']:.2f} after (others' "
        f"work shares the machine). Medians of {results['runs']} runs of each command, in "
        "turns, as the console script; the ratios are to the same interpreter's "
        "`python -c pass`.",
        "",
        "| command | wall ms | CPU ms | wall ratio | CPU ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in results["commands"].items():
        target = ""
        if name in TARGETED:
            target = (
                f"< {TARGET_RATIO:g}x: {'met' if entry['wall_ratio'] < TARGET_RATIO else 'missed'}"
            )
        lines.append(
            f"| `{name}` | {entry['wall_s'] * 1000:.0f} | {entry['cpu_s'] * 1000:.0f} | "
            f"{entry['wall_ratio']:.1f} | {entry['cpu_ratio']:.1f} | {target} |"
        )
    close = results["commands"]["firewall close"]["cpu_s"]
    met = "met" if close < TARGET_CLOSE_CPU else "missed"
    lines += [
        "",
        f"`firewall close` used {close * 1000:.0f} ms of CPU (target < "
        f"{TARGET_CLOSE_CPU * 1000:.0f} ms: {met}).",
    ]
    services = results.get("services")
    if services:
        worker, pxe = services["worker"], services["pxe-filter"]
        lines += [
            "",
            f"Until ready, medians of {len(worker['runs'])} starts (target < {TARGET_READY:g} s):",
            "",
            "| service | first milestone (s) | ready (s) | slowest ready (s) | target |",
            "|---|---|---|---|---|",
            row("`inspector worker`: pool started / first request taken", worker, "pool_started_s"),
            row("`inspector pxe-filter`, alone: closed / firewall leader", pxe, "closed_s"),
            "",
            f"The PXE filter, leader, opened the PXE service {pxe['opened_s']:.2f} s after its "
            "start (median): with the dnsmasq driver a new leader first waits for a previous "
            "holder's close to be certain (`[pxe_filter] watchdog_timeout` + `close_timeout` "
            "+ half a second, docs/firewall.md); the kernel drivers open at once.",
        ]
    return "\n".join([*lines, "", *NOTES, ""])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11, help="runs of each command")
    parser.add_argument("--services-runs", type=int, default=5, help="starts of each service")
    parser.add_argument("--no-services", action="store_true", help="the commands only")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "startup.json"))
    plots.add_arguments(parser)
    args = parser.parse_args()
    plots.publish(
        args, measure, markdown, plots.startup, "bench/startup.py", "startup.png", "Start-up"
    )


def measure(args):
    compile_package()
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": load_average(),
        },
        "runs": args.runs,
        "commands": time_commands(args.runs),
    }
    if not args.no_services:
        results["services"] = time_services(args.services_runs)
    results["machine"]["load_after"] = load_average()
    return results


if __name__ == "__main__":
    main()
