"""Leader changes of the HA PXE firewall, sampled by DHCP: three inspector hosts
(namespaces on one bridge, each with a dnsmasq and an `inspector worker`), a node
namespace sending a DHCPDISCOVER every 50 ms and recording which hosts offer.

The leader is killed with SIGKILL (it cannot close anything: its rules expire in the
kernel) or stopped with SIGTERM (it closes before it lets go of its lease), alternately,
and restarted. After a kill -9 another host offers again within 5 s; no DISCOVER is
ever answered by two hosts.

A worker with the noop driver beside them (the second worker of a host must use noop)
never takes the leadership: it would keep every real host's PXE service closed.
"""

import signal
import statistics
import time

import pytest

from tests.integration.cluster import POOL_STARTED, running_deployment, wait_for
from tests.integration.firewall_lab import Lab, is_filtered, is_open, start_worker

pytestmark = pytest.mark.integration

#: The DHCP client of the sampler: in no list, so any open host answers it.
SAMPLER_MAC = "02:00:5e:10:00:01"
LEASE = 3
OPTIONS = {
    "coordination": {"lease_timeout": LEASE, "election_interval": 0.5},
    # Nothing to filter here but the unknown sampler: no polling of Ironic needed.
    "firewall": {"blacklist_sync_period": 0, "whitelist_sync_period": 0},
}
#: Seconds within which another host must answer after the leader was killed.
FAILOVER_BOUND = 5.0


def workers_only(tmp_path, postgresql_admin, rabbitmq_url, redis_url, ironic_url):
    """The deployment's services and configuration; the workers are started per host."""
    return running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_url,
        redis_url=redis_url,
        ironic_url=ironic_url,
        apis=0,
        workers=0,
        options=OPTIONS,
    )


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path).up()
    yield lab
    lab.down()


@pytest.mark.parametrize(("driver", "changes"), [("nftables", 20), ("iptables", 1)])
def test_leader_changes_never_open_two_hosts(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url, driver, changes
):
    with workers_only(
        tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url
    ) as cluster:
        workers = {host.address: start_worker(cluster, host, driver) for host in lab.hosts}
        hosts = {host.address: host for host in lab.hosts}
        # Before a worker's first (closed) apply its dnsmasq answers everyone: sample
        # from the moment every firewall is in place.
        wait_for(
            lambda: (
                all(is_filtered(host, driver) for host in lab.hosts)
                and [is_open(host, driver) for host in lab.hosts].count(True) == 1
            ),
            30,
            message="the firewalls in place, one host open",
        )
        with lab.sampling(SAMPLER_MAC, interval=0.05) as samples:
            failovers: dict[str, list[float]] = {"kill -9": [], "SIGTERM": []}
            for change in range(changes):
                how = "kill -9" if change % 2 == 0 else "SIGTERM"
                # Somebody to take over: a worker restarted after the last change may
                # still be starting.
                wait_for(
                    lambda: sum(_ready(worker) for worker in workers.values()) >= 2,
                    30,
                    message="two workers up",
                )
                leader = wait_for(
                    lambda: _stable_leader(samples), 30, message="one host answering steadily"
                )
                process = workers[leader]
                moment = time.time()
                process.popen.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGTERM)
                answered = wait_for(
                    lambda moment=moment, old=leader: samples.first_from(moment, exclude=old),
                    FAILOVER_BOUND * 3,
                    message=lambda how=how, old=process: (
                        f"another host answering after {how}\n{_logs(old, workers.values())}"
                    ),
                )
                failovers[how].append(answered - moment)
                alive = sum(worker.alive() for worker in workers.values())
                print(
                    f"{how} of {leader} (pid {process.pid}) at {moment:.2f}: another host "
                    f"answering after {answered - moment:.2f} s; {alive} workers alive"
                )
                process.popen.wait(30)
                workers[leader] = start_worker(cluster, hosts[leader], driver)
            everything = samples.read()
        both = [s for s in everything if len(s["servers"]) > 1]
        assert not both, f"two hosts answered one DISCOVER: {both[:5]}"
        print(_summary(driver, everything, failovers))
        assert max(failovers["kill -9"]) <= FAILOVER_BOUND, failovers
        assert len(failovers["kill -9"]) + len(failovers["SIGTERM"]) == changes


def test_a_noop_worker_does_not_keep_the_real_hosts_closed(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url
):
    noop_host, real_host = lab.hosts[:2]
    with workers_only(
        tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url
    ) as cluster:
        # Started first: before the fix it took the leadership and kept it.
        noop = start_worker(cluster, noop_host, "noop")
        wait_for(lambda: _ready(noop), 30, message=lambda: f"the noop worker\n{cluster.logs()}")
        start_worker(cluster, real_host, "nftables")
        wait_for(
            lambda: is_filtered(real_host, "nftables") and is_open(real_host, "nftables"),
            20,
            message=lambda: f"the real host's PXE service open\n{cluster.logs()}",
        )
        assert noop.alive()


def _logs(signalled, workers) -> str:
    """The whole log of the signalled worker and of those that should take over (the
    service's other processes are only in the cluster's output)."""
    parts = []
    for process in [signalled, *(w for w in workers if w is not signalled)]:
        parts.append(f"----- {process.name} (pid {process.pid}, alive: {process.alive()})")
        parts.append(process.log_text())
    return "\n".join(parts)


def _ready(worker) -> bool:
    """Started and in the elections (its pool starts after them)."""
    return worker.alive() and POOL_STARTED in worker.log_text()


def _stable_leader(samples, count: int = 6) -> str | None:
    """The host that answered each of the last `count` DISCOVERs alone, if one did (a
    new leader may still hand over once: the killed member leaves the group late)."""
    last = samples.read()[-count:]
    servers = {tuple(s["servers"]) for s in last}
    if len(last) == count and len(servers) == 1 and len(next(iter(servers))) == 1:
        return next(iter(servers))[0]
    return None


def _summary(driver: str, samples: list[dict], failovers: dict[str, list[float]]) -> str:
    lines = [f"{driver}: {len(samples)} DISCOVERs sampled every 50 ms, none answered twice"]
    for how, times in failovers.items():
        if times:
            lines.append(
                f"  {how}: {len(times)} changes, another host answering after "
                f"median {statistics.median(times):.2f} s, max {max(times):.2f} s"
            )
    return "\n".join(lines)
