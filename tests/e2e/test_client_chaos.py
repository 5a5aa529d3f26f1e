"""python-ironic-inspector-client through the local cluster's HAProxy while its API
processes are killed: no call the client makes may fail.

The client is the real one (`ironic_inspector_client.ClientV1`, keystoneauth underneath,
keep-alive connections, no retries: keystoneauth's connect_retries and
status_code_retries are 0), as `openstack baremetal introspection ...` uses it, and
nothing here retries around it. A few threads each own some nodes and drive them round
the API's cycle, each step chosen from the status just read: start (`introspect`) a node
that is over, abort one that waits for its ramdisk, and list the introspections every
round, while a chaos thread kill -9s an `inspector api` every couple of seconds and starts
it again (one that HAProxy sees UP while another is: one crash at a time; with no API
left the proxy can only answer 503). Every exception of the client (a dropped
connection, an HTTP error, a 409 or 400 where the first attempt of a retried request was
taken) and every node that stays `starting` (a start that no worker received) is a
client-visible error; the test wants none. HAProxy must have retried (its `wretr` and
`wredis` counters), or the kills missed every request and the run proved nothing.

Measured on 2 CPUs, 12 kills in 40 s, about 2,000 calls: 14 errors (every one
`RemoteDisconnected`) with the HAProxy configuration and API before request retries and
request ids, none after.
"""

import dataclasses
import random
import threading
import time
from typing import Any

import pytest
from ironic_inspector_client import ClientV1
from keystoneauth1 import session as ks_session

from inspector.machine import ABORT_REASON
from tests.e2e.conftest import Chaos, enrolled, running_cluster

pytestmark = [pytest.mark.integration, pytest.mark.alone]

THREADS = 4
NODES_PER_THREAD = 2
#: Seconds the clients run while the APIs are killed.
RUN = 40.0
#: Seconds between two kills (drawn uniformly).
KILL_INTERVAL = (1.5, 2.5)
APIS = ("api-1", "api-2", "api-3")
#: Seconds a client call may take (keystoneauth waits for ever otherwise).
CALL_TIMEOUT = 30.0
#: Seconds a node may stay `starting` (the worker's start takes well under one).
STUCK = 20.0
#: Seconds between two status reads of a thread.
POLL = 0.2
#: Only the workers take part besides the APIs: nothing times out during the run.
OPTIONS = {"worker": {"pool_size": 4}}


@dataclasses.dataclass
class Tally:
    """What the client threads did and what they saw go wrong."""

    calls: int = 0
    starts: int = 0
    aborts: int = 0
    errors: list[tuple[float, str, str]] = dataclasses.field(default_factory=list)
    guard: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def call(self, what: str, node: str, action) -> tuple[bool, Any]:
        """(True, action()'s result), or (False, None) and an error recorded when it
        raised."""
        with self.guard:
            self.calls += 1
        try:
            return True, action()
        except Exception as error:  # any exception reaches the operator
            self.error(what, node, f"{type(error).__name__}: {error}")
            return False, None

    def error(self, what: str, node: str, detail: str) -> None:
        with self.guard:
            self.errors.append((time.time(), f"{what} {node}", detail[:300]))


def drive(client: ClientV1, nodes: list[str], tally: Tally, stop: threading.Event) -> None:
    """Round the nodes until stop: start the ones that are over (or never started),
    abort the waiting ones, list every round."""
    starting_since: dict[str, float] = {}
    fresh = set(nodes)
    while not stop.wait(POLL):
        tally.call("list_statuses", "", lambda: client.list_statuses(limit=50))
        for node in nodes:
            state = None
            if node in fresh:
                fresh.discard(node)
            else:
                read, status = tally.call("get_status", node, lambda n=node: client.get_status(n))
                if not read:
                    continue
                state = status["state"]
            if state in (None, "finished", "error"):
                started, _ = tally.call("introspect", node, lambda n=node: client.introspect(n))
                with tally.guard:
                    tally.starts += started
                starting_since[node] = time.monotonic()
            elif state == "waiting":
                starting_since.pop(node, None)
                aborted, _ = tally.call("abort", node, lambda n=node: client.abort(n))
                with tally.guard:
                    tally.aborts += aborted
            elif state == "starting":
                since = starting_since.setdefault(node, time.monotonic())
                if time.monotonic() - since > STUCK:
                    tally.error("stuck", node, f"starting for more than {STUCK:g} s")
                    starting_since[node] = time.monotonic()  # once per STUCK
            else:
                tally.error("state", node, f"unexpected state {state!r}")


class ApiChaos(Chaos):
    """kill -9 of an API that HAProxy sees UP, while another one is UP too: one process
    crashes at a time, and the proxy always has somewhere to send a request again (with
    none left it answers 503 itself: an outage, which no retry hides)."""

    def __init__(self, cluster, seed: int) -> None:
        super().__init__(cluster, seed, APIS, KILL_INTERVAL)
        self.skipped = 0

    def _victim(self) -> str | None:
        servers = self.cluster.servers()
        up = [name for name in APIS if servers.get(name, {}).get("status") == "UP"]
        if len(up) < 2:
            self.skipped += 1
            return None
        return self.random.choice(up)


def haproxy_retries(cluster) -> tuple[int, int]:
    """HAProxy's back end counters: (retries, redispatches)."""
    rows = cluster.servers().values()
    return (
        sum(int(row.get("wretr") or 0) for row in rows),
        sum(int(row.get("wredis") or 0) for row in rows),
    )


def test_client_sees_no_error_while_apis_are_killed(tmp_path, services, ironic_api):
    seed = random.randrange(1 << 32)
    print(f"chaos seed {seed}")
    with (
        enrolled(ironic_api, THREADS * NODES_PER_THREAD) as enrolling,
        running_cluster(tmp_path / "cluster", options=OPTIONS) as cluster,
    ):
        nodes = enrolling.result()
        # One client (and keystoneauth session: its own connections) per thread, made
        # before the chaos: the constructor reads the API's versions.
        clients = [
            ClientV1(
                inspector_url=cluster.url,
                session=ks_session.Session(auth=None, timeout=CALL_TIMEOUT),
            )
            for _ in range(THREADS)
        ]
        tally, stop = Tally(), threading.Event()
        threads = [
            threading.Thread(
                target=drive,
                args=(client, nodes[i::THREADS], tally, stop),
                name=f"client-{i}",
                daemon=True,
            )
            for i, client in enumerate(clients)
        ]
        with ApiChaos(cluster, seed) as chaos:
            begun = time.time()
            for thread in threads:
                thread.start()
            stop.wait(RUN)
            stop.set()
            for thread in threads:
                thread.join(CALL_TIMEOUT + 10)
        assert not any(thread.is_alive() for thread in threads), "a client thread hung"
        for name in APIS:  # the last one killed may still be starting
            cluster.wait_ready(name)
        retries, redispatches = haproxy_retries(cluster)
        kills = [(round(at - begun, 1), name) for at, name in chaos.kills]
        errors = [(round(at - begun, 1), what, detail) for at, what, detail in tally.errors]
        print(f"kills (s, process): {kills}; turns passed (one API UP): {chaos.skipped}")
        print(
            f"client calls {tally.calls}, starts {tally.starts}, aborts {tally.aborts}; "
            f"HAProxy retries {retries}, redispatches {redispatches}"
        )
        print(f"client-visible errors: {len(errors)}")
        for error in errors:
            print(f"  {error}")
        assert chaos.error is None, f"the chaos thread failed: {chaos.error!r}"

        # The chaos happened and reached requests, and the clients got work done.
        assert len(chaos.kills) >= RUN / KILL_INTERVAL[1] / 2, chaos.kills
        assert retries + redispatches > 0, "HAProxy never retried: the kills hit no request"
        assert tally.starts >= len(nodes) and tally.aborts >= len(nodes), tally
        assert errors == []

        # Every abort took: the nodes are aborted or on their way round again.
        for node in nodes:
            status = clients[0].get_status(node)
            assert status["state"] in ("starting", "waiting", "error"), status
            if status["state"] == "error":
                assert status["error"] == ABORT_REASON, status
