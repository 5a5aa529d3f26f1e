"""Recovery after a backend returns: the time from the backend's return to the first new
introspection finished, per backend, on real services.

    scripts/services start postgresql redis rabbitmq ironic; eval "$(scripts/services env)"
    .venv/bin/python bench/recovery.py [--rounds 3] [--baseline 3] [--outage 15]
        [--backends database,queue,dlm,ironic] [--out bench/results/recovery.json]

For each backend (the database on PostgreSQL, the queue on RabbitMQ, the DLM on Redis,
Ironic), a small deployment (bench/fleet/ours.py: one `inspector api`, two `inspector
worker` processes, defaults kept) reaches that backend through a TCP proxy of the
bench's own; the other backends directly. Nodes are enrolled in that Ironic
(fake-hardware, one PXE port each) and deleted at the end. An introspection is driven as
an operator and a ramdisk drive it: the start (sent again after a 503 or a refused
connection), then, once Ironic shows the node powered on, the real ironic-python-agent
payload posted with the agent's retries (bench/fleet/ramdisk.py: 5 attempts, 5/5/6/12 s
apart), until `finished` (its `finished_at`).

Baseline: the time from the start to `finished` with everything up (median of
--baseline). Each round then closes the proxy for --outage seconds (connections refused
and reset, as a stopped service; under the workers' default retry budget of
`max_retries x retry_interval` = 20 s, so they ride it out), opens it again and at once
starts a new introspection: the time from the return to its `finished`. An outage
begins only once no worker logged a warning for 5 s: a worker that did not reach the
backend between two outages would count them as one and give up. Results go to JSON
and to docs/performance.md,
the plot to docs/images/recovery.png (`--plot-only` draws both again from the JSON).
"""

import argparse
import contextlib
import datetime
import os
import pathlib
import platform
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

import requests

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import plots  # noqa: E402
from bench.fleet import ours  # noqa: E402
from bench.fleet.ironic import HEADERS  # noqa: E402
from bench.fleet.ramdisk import Ramdisks, load_template, payload  # noqa: E402
from bench.worker import env, fresh_database  # noqa: E402
from tests.integration.proxy import TcpProxy  # noqa: E402

#: backend: (service, environment variable of its URL)
BACKENDS = {
    "database": ("PostgreSQL", "INSPECTOR_TEST_POSTGRESQL_URL"),
    "queue": ("RabbitMQ", "INSPECTOR_TEST_RABBITMQ_URL"),
    "dlm": ("Redis", "INSPECTOR_TEST_REDIS_URL"),
    "ironic": ("Ironic", "INSPECTOR_TEST_IRONIC_URL"),
}
WORKERS = 2
THREADS = 4
#: Seconds one introspection may take before it counts as lost (the ramdisk's retries
#: alone span 28 s).
DEADLINE = 120.0
#: Seconds between two looks at a state (the API's status, Ironic's power state).
POLL = 0.1
#: Seconds without a worker's warning before an outage begins (over two retry intervals).
SETTLE = 5.0
#: Attempts of a start answered 503 or refused, as a client sends it again.
START_ATTEMPTS = 10


def utcnow():
    """Naive UTC, as the API prints `finished_at`."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def target(url):
    parts = urllib.parse.urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port


def through(url, proxy):
    """url with its host and port replaced by the proxy's."""
    parts = urllib.parse.urlsplit(url)
    credentials = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{credentials}127.0.0.1:{proxy.port}"))


class Site:
    """The bench's nodes in Ironic (reached directly, never through the proxy):
    fake-hardware, one PXE port and a BMC address of their own; deleted by delete()."""

    def __init__(self, url):
        self.url = url.rstrip("/") + "/v1"
        self.session = requests.Session()
        self.session.headers.update(HEADERS)
        self.nodes = {}  # uuid: (mac, bmc)

    def _call(self, method, path, body=None):
        answer = self.session.request(method, self.url + path, json=body, timeout=30)
        answer.raise_for_status()
        return answer.json() if answer.content else None

    def enroll(self):
        mac = "02:" + ":".join(f"{random.randrange(256):02x}" for _ in range(5))
        bmc = "198.18." + ".".join(str(random.randrange(1, 255)) for _ in range(2))
        node = self._call(
            "POST",
            "/nodes",
            {
                "name": f"bench-recovery-{uuid.uuid4().hex[:12]}",
                "driver": "fake-hardware",
                "driver_info": {"ipmi_address": bmc},
            },
        )
        self.nodes[node["uuid"]] = (mac, bmc)
        self._call("POST", "/ports", {"node_uuid": node["uuid"], "address": mac})
        self._call("PUT", f"/nodes/{node['uuid']}/states/provision", {"target": "manage"})
        self.wait(node["uuid"], lambda n: n["provision_state"] == "manageable")
        return node["uuid"]

    def wait(self, node, condition):
        """The node once condition(node) holds; None after DEADLINE."""
        deadline = time.monotonic() + DEADLINE
        while not condition(state := self._call("GET", f"/nodes/{node}")):
            if time.monotonic() > deadline:
                return None
            time.sleep(POLL)  # polling Ironic with a deadline
        return state

    def delete(self):
        for node in list(self.nodes):
            deadline = time.monotonic() + DEADLINE
            while True:  # a node still locked by its last power action answers 409
                answer = self.session.delete(f"{self.url}/nodes/{node}", timeout=30)
                if answer.status_code in (204, 404) or time.monotonic() > deadline:
                    break
                time.sleep(POLL)  # polling Ironic with a deadline
            del self.nodes[node]
        self.session.close()


def start(api_url, node):
    """POST the start, again after a 503 or a connection error; the attempts made."""
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            answer = requests.post(f"{api_url}/v1/introspection/{node}", timeout=30)
        except requests.ConnectionError:
            answer = None
        if answer is not None and answer.status_code == 202:
            return attempt
        if answer is not None and answer.status_code != 503:
            raise RuntimeError(f"start of {node}: HTTP {answer.status_code} {answer.text}")
        retry_after = answer.headers.get("Retry-After", "1") if answer is not None else "1"
        time.sleep(float(retry_after))  # as a client waits before it sends again
    raise RuntimeError(f"start of {node} refused {START_ATTEMPTS} times")


def final_status(api_url, node):
    """The status once the introspection ended (None past DEADLINE)."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        with contextlib.suppress(requests.RequestException, ValueError):
            status = requests.get(f"{api_url}/v1/introspection/{node}", timeout=10).json()
            if status.get("finished"):
                return status
        time.sleep(POLL)  # polling the API with a deadline
    return None


class Driver:
    """Drives introspections on one deployment: its nodes (enrolled here) and their
    ramdisks."""

    def __init__(self, running, site, template):
        self.running, self.site, self.template = running, site, template
        self.ramdisks = Ramdisks(boot_delay=0.0, threads=2)
        self.payloads = {}

    def node(self):
        """A new node, its ramdisk ready to post to this deployment."""
        node = self.site.enroll()
        mac, bmc = self.site.nodes[node]
        self.payloads[node] = payload(self.template, [mac], bmc)
        self.ramdisks.register(self.payloads, self.running.url)
        return node

    def alive(self):
        """How many of the deployment's processes still run."""
        processes = [self.running.api, *(worker for worker, _port in self.running.workers)]
        return sum(process.poll() is None for process in processes)

    def introspect(self, node, since):
        """One introspection; seconds from `since` (naive UTC) to each of its steps."""
        attempts = start(self.running.url, node)
        accepted = utcnow()
        on = self.site.wait(
            node, lambda n: n["power_state"] == "power on" and not n["target_power_state"]
        )
        powered = utcnow()
        status = None
        if on is not None:
            self.ramdisks.boot(node)  # the ramdisk boots once the node is powered on
            status = final_status(self.running.url, node)
        result = {
            "start_attempts": attempts,
            "start_accepted": (accepted - since).total_seconds(),
            "powered_on": on and (powered - since).total_seconds(),
            "posts": sum(1 for posted in self.ramdisks.posted if posted[0] == node),
            "post_failures": [list(f[1:]) for f in self.ramdisks.failures if f[0] == node],
            "state": status and status["state"],
            "error": status and status["error"],
            "seconds": None,
            "processes_alive": self.alive(),
        }
        if status and status["state"] == "finished":
            finished = datetime.datetime.fromisoformat(status["finished_at"]).replace(tzinfo=None)
            result["seconds"] = (finished - since).total_seconds()
        return result

    def after_outage(self, proxy, outage):
        """The backend away for `outage` seconds, then a new introspection at once; and
        the workers settled before the next outage."""
        node = self.node()
        self.settle()
        proxy.cut()
        time.sleep(outage)  # the outage itself: what is measured comes after it
        proxy.restore()
        return self.introspect(node, utcnow())

    def settle(self):
        """Until no worker logged a warning or an error for SETTLE seconds (a worker still
        retrying a backend logs one every retry_interval): two outages in a row would
        count as one to a worker that did not reach the backend in between."""
        logs = [self.running.workdir / f"worker-{n}.log" for n in range(len(self.running.workers))]
        count, since = None, time.monotonic()
        deadline = since + DEADLINE
        while time.monotonic() - since < SETTLE:
            current = sum(complaints(log) for log in logs)
            if current != count:
                count, since = current, time.monotonic()
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers still complaining after {DEADLINE} s: {logs}")
            time.sleep(POLL)  # polling the logs with a deadline


def complaints(log):
    """Warning and error lines in a log so far."""
    with open(log, errors="replace") as lines:
        return sum(1 for line in lines if " WARNING " in line or " ERROR " in line)


@contextlib.contextmanager
def deployment(backend, workdir):
    """The deployment with `backend` behind the bench's proxy; (running, proxy)."""
    urls = {name: env(variable) for name, (_service, variable) in BACKENDS.items()}
    with fresh_database(urls["database"]) as database_url:
        urls["database"] = database_url
        with TcpProxy(*target(urls[backend])) as proxy:
            urls[backend] = through(urls[backend], proxy)
            with ours.running(
                workdir,
                database_url=urls["database"],
                queue_url=urls["queue"],
                redis_url=urls["dlm"],
                ironic_url=urls["ironic"],
                workers=WORKERS,
                threads=THREADS,
            ) as running:
                yield running, proxy


def summary(rounds, baseline=None):
    times = [r["seconds"] for r in rounds if r["seconds"] is not None]
    result = {
        "seconds": [r["seconds"] for r in rounds],
        "lost": len(rounds) - len(times),
        "median": statistics.median(times) if times else None,
        "max": max(times) if times else None,
    }
    if baseline and times:
        result["ratio"] = result["median"] / baseline
        result["max_ratio"] = result["max"] / baseline
    result["rounds"] = rounds
    return result


def bench_backend(backend, args, workdir, template):
    site = Site(env(BACKENDS["ironic"][1]))
    load_before = os.getloadavg()[0]
    try:
        with deployment(backend, workdir / backend) as (running, proxy):
            driver = Driver(running, site, template)
            try:
                baseline = [
                    driver.introspect(driver.node(), utcnow()) for _ in range(args.baseline)
                ]
                base = summary(baseline)
                rounds = [driver.after_outage(proxy, args.outage) for _ in range(args.rounds)]
            finally:
                driver.ramdisks.stop()
    finally:
        site.delete()
    result = {
        "service": BACKENDS[backend][0],
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "baseline": base,
        "recovery": summary(rounds, base["median"]),
    }
    print(backend, base["seconds"], result["recovery"]["seconds"], flush=True)
    return result


def commit():
    """The commit measured, `+dirty` when the tree had changes."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def run(args):
    template = load_template()
    results = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "kernel": platform.release(),
            "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": commit(),
        },
        "command": "bench/recovery.py " + shlex.join(sys.argv[1:]),
        "settings": {
            "apis": 1,
            "workers": WORKERS,
            "worker_threads": THREADS,
            "outage_seconds": args.outage,
            "baseline_introspections": args.baseline,
            "rounds": args.rounds,
            "retry_budget_seconds": 20,
            "settle_seconds": SETTLE,
        },
        "backends": {},
    }
    with contextlib.ExitStack() as stack:
        workdir = pathlib.Path(args.logs or stack.enter_context(tempfile.TemporaryDirectory()))
        for backend in args.backends.split(","):
            results["backends"][backend] = bench_backend(backend, args, workdir, template)
    return results


def figure(value, digits=2, suffix=""):
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def refusals(rounds):
    """ "starts / posts" answered with an error or refused after the backend's return."""
    starts = sum(r["start_attempts"] - 1 for r in rounds)
    posts = sum(len(r["post_failures"]) for r in rounds)
    return f"{starts} / {posts}"


def markdown(results):
    settings = results["settings"]
    lines = [
        "## Recovery after a backend returns (`bench/recovery.py`)",
        "",
        f"One API and {settings['workers']} worker processes, defaults kept (a retry budget "
        f"of {settings['retry_budget_seconds']} s per backend); the backend under test "
        "reached through a TCP proxy of the benchmark's own, closed for "
        f"{settings['outage_seconds']:g} s (connections refused and reset, as a stopped "
        "service) and opened again, once the workers had logged no warning for "
        f"{settings['settle_seconds']:g} s. At once a new introspection is started and its "
        "ramdisk posts the real ironic-python-agent payload when Ironic shows the node "
        "powered on (5 attempts, 5/5/6/12 s apart). Recovery: from the backend's return to "
        "that introspection's `finished_at`; baseline: from the start to `finished_at` with "
        f"everything up (median of {settings['baseline_introspections']}), through the same "
        f"proxy. {settings['rounds']} rounds per backend; {results['machine']['cpus']} CPUs "
        f"shared with other work; {results['machine']['when']}.",
        "",
        "| backend | baseline (s) | recovery median (s) | recovery max (s) "
        "| ratio (median / baseline) | refused after the return (starts / posts) | lost |",
        "|---|---|---|---|---|---|---|",
    ]
    for backend, result in results["backends"].items():
        recovery = result["recovery"]
        lines.append(
            f"| {backend} ({result['service']}) | {figure(result['baseline']['median'])} "
            f"| {figure(recovery['median'])} | {figure(recovery['max'])} "
            f"| {figure(recovery.get('ratio'), 1, 'x')} | {refusals(recovery['rounds'])} "
            f"| {recovery['lost']} |"
        )
    lines += [
        "",
        "Run it (a minute and a half per backend; `--backends`, `--outage`, `--rounds`; "
        "results in `bench/results/recovery.json` with each round's steps):",
        "",
        "```",
        'scripts/services start postgresql redis rabbitmq ironic; eval "$(scripts/services env)"',
        ".venv/bin/python bench/recovery.py --rounds 3",
        "```",
    ]
    return "\n".join(lines) + "\n"


def _leave(signum, _frame):
    raise SystemExit(f"stopped by signal {signum}")  # the finally blocks clean up


def main():
    # Started in the background, SIGINT may be ignored: both signals clean up.
    signal.signal(signal.SIGTERM, _leave)
    signal.signal(signal.SIGINT, _leave)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="outages per backend")
    parser.add_argument("--baseline", type=int, default=3, help="introspections all up")
    parser.add_argument("--outage", type=float, default=15.0, help="seconds a backend is away")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--logs", help="keep the deployments' logs in this directory")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "recovery.json"))
    plots.add_arguments(parser)
    args = parser.parse_args()
    plots.publish(
        args,
        run,
        markdown,
        plots.recovery,
        "bench/recovery.py",
        "recovery.png",
        "Recovery after an outage",
    )


if __name__ == "__main__":
    main()
