"""Our service as the local cluster runs it, for the fleet benchmark's `cluster` scenario:
`scripts/cluster` brings up three `inspector api` processes behind HAProxy and
three inspector hosts (network namespaces, each with its dnsmasq and an `inspector
worker` whose nftables firewall acts inside it) on a scratch database, with a release
of this checkout installed in a virtualenv of its own.

Configured as bench/fleet/ours.py configures the single-host deployment, on top of the
cluster's own settings: Ironic through the counting proxy, the introspection timeout at
ironic-inspector's 3600 s, no per-source limit on /v1/continue (every simulated ramdisk
posts from 127.0.0.1), and the worker pool size.
"""

import contextlib
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

from bench.fleet import procstat

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "scripts" / "cluster"
#: The cluster's inspector hosts (one worker process each); scripts/cluster's HOSTS.
HOSTS = 3
#: Seconds `scripts/cluster up` may take (it installs a release with pip), and `down`.
UP_TIMEOUT = 900.0
DOWN_TIMEOUT = 600.0
#: The processes whose CPU is ours: the APIs and the workers (not HAProxy, dnsmasq).
OURS = ("api-", "worker-")


def _cluster(directory: pathlib.Path, *args: str, env: dict, timeout: float) -> None:
    result = subprocess.run(
        [str(CLUSTER), "--dir", str(directory), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"scripts/cluster {' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stderr[-4000:]}"
        )


@dataclasses.dataclass
class Cluster:
    """The running cluster."""

    directory: pathlib.Path
    url: str  # HAProxy's
    env: dict

    def _processes(self) -> dict[str, dict]:
        state = json.loads((self.directory / "state.json").read_text())
        return state.get("processes", {})

    def pids(self) -> list[int]:
        """Every process in the APIs' and the workers' process groups."""
        return procstat.in_groups(
            {
                info["pid"]
                for name, info in self._processes().items()
                if name.startswith(OURS) and info.get("pid")
            }
        )

    def kill_worker(self) -> int:
        """kill -9 of the first host's worker (`scripts/cluster kill worker 1`); its pid."""
        pid = self._processes()["worker-1"]["pid"]
        _cluster(self.directory, "kill", "worker", "1", env=self.env, timeout=60)
        return pid

    def logs(self) -> str:
        return "\n".join(
            f"== {path.name}\n" + path.read_text(errors="replace")[-3000:]
            for path in sorted((self.directory / "logs").glob("*.log"))
        )


@contextlib.contextmanager
def running(directory: pathlib.Path, *, ironic_url: str, threads: int) -> Iterator[Cluster]:
    """The cluster up until the block ends, then `scripts/cluster down` (which removes
    its database, namespaces and processes, and leaves the services running)."""
    settings = {
        "ironic.endpoint_override": ironic_url,
        "DEFAULT.timeout": "3600",
        "api.continue_rate_limit": "0",
        "worker.pool_size": str(threads),
    }
    # The cluster checks that its Ironic answers: the proxy's URL, so it starts no other.
    env = dict(os.environ, INSPECTOR_TEST_IRONIC_URL=ironic_url)
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    try:
        _cluster(directory, "up", "--port", "0", *sets, env=env, timeout=UP_TIMEOUT)
        state = json.loads((directory / "state.json").read_text())
        yield Cluster(directory, f"http://127.0.0.1:{state['ports']['haproxy']}", env)
    finally:
        if (directory / "state.json").exists():
            try:
                _cluster(directory, "down", env=env, timeout=DOWN_TIMEOUT)
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                print(f"cluster down: {error}", file=sys.stderr)
