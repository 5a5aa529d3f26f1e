"""The design's rolling upgrade, run on the local cluster (`scripts/cluster upgrade`).

Expand the schema with the new release; take each API out of HAProxy, let its sessions
end, stop it (SIGTERM), start it on the new release, wait for /healthcheck, put it back;
then each worker host: SIGTERM, wait for it to leave, start it on the new release, wait
for its pool; finally contract the schema. At every moment at least two of the three
APIs serve and two workers work, so introspections in flight go on (docs/upgrade.md).
"""

import contextlib
import fcntl
import pathlib
import shutil
import time
from collections.abc import Iterator

from cluster import APIS, HOSTS, Cluster, ClusterError, build_release, say, wait_for

#: Seconds a drained API back end gets for its sessions to end before it is stopped
#: anyway (the proxy retries what a stopped back end refused).
DRAIN_TIMEOUT = 30.0
#: HAProxy's name of the back end the APIs are in.
BACKEND = "inspector_api"


@contextlib.contextmanager
def _only_one(cluster: Cluster) -> Iterator[None]:
    """One upgrade at a time; the cluster's own lock stays free for kill and restart."""
    with open(cluster.dir / "upgrade.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError("another upgrade of this cluster is running") from None
        yield


def _step(started: float, message: str) -> None:
    say(f"[upgrade +{time.monotonic() - started:5.1f} s] {message}")


def _migrate(cluster: Cluster, phase: str, release: str) -> None:
    result = cluster.inspector("db", "upgrade", f"--{phase}", release=release)
    if result.returncode != 0:
        raise ClusterError(f"inspector db upgrade --{phase}:\n{result.stdout}{result.stderr}")
    for line in result.stdout.strip().splitlines():
        say(f"  {line}")


def upgrade_api(cluster: Cluster, index: int, release: str) -> None:
    """Out of HAProxy (drain: no new request), stop once its sessions ended, start on
    the release, healthy, back in."""
    name = f"api-{index}"
    cluster.haproxy(f"set server {BACKEND}/{name} state drain")
    with contextlib.suppress(ClusterError):  # a long request does not hold the upgrade
        wait_for(
            lambda: cluster.servers().get(name, {}).get("scur") == "0",
            DRAIN_TIMEOUT,
            f"{name}: its sessions ending",
        )
    cluster.stop(name)
    cluster.start(name, release)
    cluster.wait_ready(name)
    cluster.haproxy(f"set server {BACKEND}/{name} state ready")
    cluster.wait_server(name, "UP")


def upgrade_worker(cluster: Cluster, index: int, release: str) -> None:
    """SIGTERM (it leaves its groups, closes its firewall, finishes its running tasks;
    what it had not acknowledged goes back to the queue), then start on the release."""
    name = f"worker-{index}"
    cluster.stop(name)
    cluster.start(name, release)
    cluster.wait_ready(name)


def upgrade(cluster: Cluster, *, source: pathlib.Path | None = None, ref: str | None = None) -> str:
    """Roll the whole cluster onto a new release built from source or ref (default: the
    checkout as it is now); the new release's name."""
    state = cluster.load()
    if not state.get("release"):
        raise ClusterError(f"no cluster in {cluster.dir}: scripts/cluster up")
    if not cluster.alive("haproxy"):
        raise ClusterError("HAProxy is not running: scripts/cluster up first")
    with _only_one(cluster):
        started = time.monotonic()
        old, new = state["release"], cluster.next_release_name()
        _step(started, f"building release {new} (running: {old})")
        build_release(cluster.dir / "releases", new, source, ref)
        _step(started, "inspector db upgrade --expand (what the running release runs on)")
        _migrate(cluster, "expand", new)
        cluster.record("release", new)  # what a restart starts from now on
        for index in range(1, APIS + 1):
            _step(started, f"api-{index}: drain, stop, upgrade, start, ready")
            upgrade_api(cluster, index, new)
        for index in range(1, HOSTS + 1):
            _step(started, f"worker-{index}: stop (SIGTERM), upgrade, start")
            upgrade_worker(cluster, index, new)
        _step(started, "inspector db upgrade --contract (every process runs the new code)")
        _migrate(cluster, "contract", new)
        shutil.rmtree(cluster.dir / "releases" / old, ignore_errors=True)
        _step(started, f"done: every process runs release {new}")
    return new
