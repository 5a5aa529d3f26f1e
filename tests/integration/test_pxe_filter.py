"""`inspector pxe-filter` with [pxe_filter] whitelist_source = ironic: the HA PXE filter of
Ironic's own built-in inspection (Ironic 2026.1 and later), in place of ironic-pxe-filter.

A real Ironic 39 (tests/integration/ironic_lab.py: the agent inspect interface on fake
hardware, versioned notifications to the test RabbitMQ) and three PXE hosts in network
namespaces (tests/integration/firewall_lab.py), each with a real dnsmasq and an
`inspector pxe-filter` in front of it (nftables; the first test with iptables and with
the dnsmasq driver's hostsdir too); no database, no work queue. The node put under
inspection in Ironic gets a lease from exactly one host, within a second of Ironic's
notification; a node not under inspection gets none; the ramdisk's post to Ironic's
/v1/continue_inspection takes the node back to `manageable` and its MAC is denied
again. The open host killed with SIGKILL: another opens, the node still gets its lease,
never two hosts answering one DISCOVER (sampled every 50 ms). Notifications off: the
leader polls the nodes under inspection every second (ten nodes allowed, then denied,
within 2 s of Ironic's change, never two hosts answering; each host's metrics and
`inspector status` show its role); only the leader lists the ports (every port each
full period, those changed in between), the others follow its listing (Ironic's log
counts the listings). Ironic unreachable: the firewall stays as it was for the outage
budget, then every host closes. Last, with whitelist_source = inspector: the firewall
of our own introspections (through our API and workers) on hosts that run no worker.
"""

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.parse
import uuid

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import IronicAPI
from tests.integration.cluster import (
    INSPECTOR,
    ROOT,
    coordination_url,
    free_port,
    render_config,
    running_deployment,
    start,
    wait_for,
)
from tests.integration.firewall_lab import Lab, is_filtered, is_open, listed, worker_options
from tests.integration.ironic_lab import (
    CONTINUE_INSPECTION_VERSION,
    delete_queues,
    notifying_ironic,
    rabbit_url,
)
from tests.integration.proxy import TcpProxy
from tests.integration.test_firewall_dhcp import OPTIONS as DHCP_OPTIONS

pytestmark = pytest.mark.integration

DRIVER = "nftables"
LEASE = 3
#: Seconds from Ironic's change to the firewall's (the issue's target with notifications).
BOUND = 1.0
#: Seconds from Ironic's change to the firewall's without notifications (the leader polls
#: the nodes under inspection every [firewall] inspection_poll_interval, 1 s).
POLLED = 2.0
#: Nodes put into `inspect` at once without notifications.
NODES = 10
#: Ironic states of a node under inspection.
INSPECTING = ("inspecting", "inspect wait")


@pytest.fixture(scope="module")
def ironic_dir(tmp_path_factory):
    """The private Ironic's directory: its log (ironic/ironic.log) records each request."""
    return tmp_path_factory.mktemp("ironic")


@pytest.fixture(scope="module")
def ironic(rabbitmq_server, ironic_dir):
    """(URL, notifications topic) of a private notifying Ironic."""
    with notifying_ironic(rabbitmq_server, ironic_dir) as started:
        yield started


@pytest.fixture
def api(ironic):
    api = IronicAPI(ironic[0])
    try:
        yield api
    finally:
        # A node left under inspection can be deleted in maintenance only.
        for node in api.node_uuids:
            api.request("PUT", f"/nodes/{node}/maintenance", {"reason": "test over"})
        api.delete_nodes()


@pytest.fixture
def lab(request, tmp_path):
    """The PXE hosts, for the driver a test names (indirect parameter; else nftables)."""
    driver = getattr(request, "param", DRIVER)
    lab = Lab(tmp_path, hostsdir=driver == "dnsmasq").up()
    lab.driver = driver
    yield lab
    lab.down()


class Filters:
    """An `inspector pxe-filter` per lab host, sharing a DLM, Ironic and RabbitMQ."""

    def __init__(self, tmp_path, lab, service, rabbitmq_url, redis_url, **sections) -> None:
        url, topic = service
        self.tmp_path, self.lab, self.driver = tmp_path, lab, lab.driver
        self.channel_topic = f"inspector_firewall_{uuid.uuid4().hex[:8]}"
        self.rabbitmq_url = rabbitmq_url
        self.sections = {
            "coordination": {
                "backend_url": coordination_url(redis_url, f"test-{uuid.uuid4().hex[:12]}"),
                "lease_timeout": LEASE,
                "election_interval": 0.5,
            },
            "ironic": {
                "auth_type": "none",
                "endpoint_override": url,
                "max_retries": 3,
                "retry_interval": 0.5,
            },
            "firewall": {
                "channel_url": rabbit_url(rabbitmq_url),
                "channel_topic": self.channel_topic,
                "ironic_topic": topic,
            },
        }
        for section, values in sections.items():
            self.sections.setdefault(section, {}).update(values)
        self.processes: dict[str, subprocess.Popen] = {}
        #: Host address -> the port its filter serves its metrics on.
        self.metrics_ports: dict[str, int] = {}
        self._logs: list = []

    def start(self, host) -> subprocess.Popen:
        options = worker_options(host, self.driver, {"pxe_filter": {"whitelist_source": "ironic"}})
        if host.hostsdir is not None:
            options["dnsmasq_pxe_filter"] = {"dhcp_hostsdir": str(host.hostsdir)}
            # A new dnsmasq leader waits for a previous one's watchdog and close: short
            # here (no watchdog runs; test_pxe_filter_watchdog.py tests that wait).
            options["pxe_filter"].update(watchdog_timeout=1, close_timeout=0)
        for section, values in self.sections.items():
            options.setdefault(section, {}).update(values)
        port = self.metrics_ports.setdefault(host.address, free_port())
        options["metrics"] = {"pxe_filter_listen_port": port}
        config = self.tmp_path / f"pxe-filter-{host.index}.conf"
        config.write_text(render_config(options))
        log = open(self.tmp_path / f"pxe-filter-{host.index}.log", "a")  # closed in stop()
        self._logs.append(log)
        process = subprocess.Popen(
            [*INSPECTOR, "pxe-filter", "--config-file", str(config)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self.processes[host.address] = process
        return process

    def logs(self) -> str:
        return "\n".join(
            f"--- pxe-filter {host.index}\n"
            + (self.tmp_path / f"pxe-filter-{host.index}.log").read_text()[-3000:]
            for host in self.lab.hosts
        )

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in self._logs:
            log.close()
        delete_queues(
            self.rabbitmq_url,
            [f"{self.channel_topic}.host{host.index}.ironic" for host in self.lab.hosts],
        )

    def metrics(self, host) -> dict[str, float]:
        """The host's filter's metrics: sample name with its labels -> value."""
        port = self.metrics_ports[host.address]
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        return {
            sample.name + str(dict(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def status(self, host) -> subprocess.CompletedProcess:
        """`inspector status` with the host's configuration (the channel's broker)."""
        config = self.tmp_path / f"pxe-filter-{host.index}.conf"
        return subprocess.run(
            [*INSPECTOR, "status", "--wait", "2", "--config-file", str(config)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def open_hosts(self) -> list:
        return [host for host in self.lab.hosts if is_open(host, self.driver)]

    def in_place(self):
        """The one open host, once every host filters and exactly one is open."""
        if all(is_filtered(host, self.driver) for host in self.lab.hosts):
            opened = self.open_hosts()
            return opened[0] if len(opened) == 1 else None
        return None

    def ready(self) -> bool:
        """Every host filtering, one open (dnsmasq: an open hostsdir that answers nobody
        looks like a closed one, until a node is under inspection: its log says it)."""
        if self.driver == "dnsmasq":
            return all(is_filtered(host, self.driver) for host in self.lab.hosts) and re.search(
                r"opening the PXE service$", self.logs(), re.M
            )
        return self.in_place() is not None

    def allows(self, host, mac: str) -> bool:
        return mac in listed(host, self.driver, "whitelist")

    def allowing(self, mac: str) -> list:
        """The hosts whose firewall lets mac through."""
        return [host for host in self.lab.hosts if self.allows(host, mac)]


@contextlib.contextmanager
def pxe_filters(tmp_path, lab, service, rabbitmq_url, redis_url, **sections):
    """Filters started on every host of lab; `service`: the `ironic` fixture."""
    filters = Filters(tmp_path, lab, service, rabbitmq_url, redis_url, **sections)
    try:
        for host in lab.hosts:
            filters.start(host)
        wait_for(
            filters.ready, 30, 0.1, lambda: f"every host filtering, one open\n{filters.logs()}"
        )
        yield filters
    finally:
        filters.stop()


def inspect(api: IronicAPI, node: dict) -> float:
    """Ask Ironic to inspect node; the time (monotonic) it was first seen inspecting."""
    api.request("PUT", f"/nodes/{node['uuid']}/states/provision", {"target": "inspect"})
    wait_for(
        lambda: api.get_node(node["uuid"])["provision_state"] in INSPECTING, 10, 0.02, "inspecting"
    )
    seen = time.monotonic()
    api.wait_for(node["uuid"], lambda n: n["provision_state"] == "inspect wait")
    return seen


def continue_inspection(api: IronicAPI, mac: str) -> float:
    """The ramdisk's post to Ironic; the time (monotonic) Ironic's node was manageable."""
    from tests.integration.cluster import ipa_payload  # noqa: PLC0415

    response = api.session.post(
        f"{api.url}/v1/continue_inspection",
        json=ipa_payload([mac]),
        headers={"X-OpenStack-Ironic-API-Version": CONTINUE_INSPECTION_VERSION},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    node = response.json()["node"]["uuid"]
    api.wait_for(node, lambda n: n["provision_state"] == "manageable")
    return time.monotonic()


def enrolled(api: IronicAPI) -> tuple[dict, str]:
    node = api.enroll(inspect_interface="agent")
    return node, api.node_ports(node["uuid"])[0]["address"]


@pytest.mark.parametrize("lab", ["nftables", "iptables", "dnsmasq"], indirect=True)
def test_ironic_inspection_opens_one_host_for_the_node_and_closes_after(
    tmp_path, lab, api, ironic, rabbitmq_server, redis_server
):
    node, mac = enrolled(api)
    other, other_mac = enrolled(api)
    unknown = IronicAPI.new_mac()
    with pxe_filters(tmp_path, lab, ironic, rabbitmq_server, redis_server) as filters:
        # Nobody under inspection: known and unknown MACs alike get no answer.
        assert lab.lease(mac) is None
        assert lab.lease(unknown) is None

        seen = inspect(api, node)
        allowed = wait_for(
            lambda: filters.allowing(mac) and time.monotonic(), 10, 0.02, f"{mac} allowed"
        )
        (leader,) = filters.allowing(mac)
        lease = lab.lease(mac)
        assert lease is not None and lease["server"] == leader.address, lease
        with lab.sampling(mac) as samples:
            wait_for(lambda: len(samples.read()) >= 20, 10, message="20 DISCOVERs sampled")
            answered = samples.read()
        assert all(sample["servers"] == [leader.address] for sample in answered), answered
        # A node not under inspection stays denied; an unknown MAC boots while a node is
        # under inspection (its NIC may not be enrolled yet), as with ironic-pxe-filter.
        assert lab.lease(other_mac) is None
        assert lab.lease(unknown) is not None

        left = continue_inspection(api, mac)
        denied = wait_for(
            lambda: not filters.allowing(mac) and time.monotonic(), 10, 0.02, f"{mac} denied"
        )
        assert lab.lease(mac) is None
        assert lab.lease(unknown) is None
        print(
            f"allowed {allowed - seen:.2f} s after Ironic showed the node inspecting; "
            f"denied {denied - left:.2f} s after it showed it manageable"
        )
        assert allowed - seen < BOUND
        assert denied - left < BOUND
        assert all(process.poll() is None for process in filters.processes.values())
        assert other["uuid"] not in filters.logs()


def test_the_open_host_killed_another_opens_and_the_node_still_boots(
    tmp_path, lab, api, ironic, rabbitmq_server, redis_server
):
    node, mac = enrolled(api)
    with pxe_filters(tmp_path, lab, ironic, rabbitmq_server, redis_server) as filters:
        inspect(api, node)
        leader = wait_for(
            lambda: (host := filters.in_place()) and filters.allows(host, mac) and host,
            10,
            0.02,
            f"{mac} allowed on the open host",
        )
        with lab.sampling(mac) as samples:
            wait_for(
                lambda: [s["servers"] for s in samples.read()[-5:]] == [[leader.address]] * 5,
                10,
                message="the open host answering the node",
            )
            moment = time.time()
            os.kill(filters.processes[leader.address].pid, signal.SIGKILL)
            answered = wait_for(
                lambda: samples.first_from(moment, exclude=leader.address),
                LEASE * 5,
                message=lambda: f"another host answering the node\n{filters.logs()}",
            )
            # A few more answers from the new leader, then the whole record.
            wait_for(lambda: samples.read()[-1]["at"] > answered + 1, 10, message="1 s more")
            everything = samples.read()
        both = [sample for sample in everything if len(sample["servers"]) > 1]
        assert not both, f"two hosts answered one DISCOVER: {both[:5]}"
        failover = answered - moment
        print(f"{len(everything)} DISCOVERs; another host answering {failover:.2f} s after kill -9")
        assert failover < LEASE + 2
        lease = lab.lease(mac)
        assert lease is not None and lease["server"] != leader.address, lease


def _first_times(pending: dict, is_done, timeout: float, what: str) -> dict:
    """key -> the time (monotonic) is_done(key) first held, every key within timeout."""
    done: dict = {}

    def look() -> bool:
        for key in [key for key in pending if key not in done]:
            if is_done(key):
                done[key] = time.monotonic()
        return len(done) == len(pending)

    wait_for(look, timeout, 0.02, lambda: f"{what}: {len(done)} of {len(pending)}")
    return done


def test_without_notifications_the_leader_polls_the_inspected_nodes_every_second(
    tmp_path, lab, api, ironic, rabbitmq_server, redis_server
):
    macs = {node["uuid"]: mac for node, mac in (enrolled(api) for _ in range(NODES))}
    # [firewall] inspection_poll_interval: 1 s, not stretched by the machine's load (the
    # tests' Ironic shares its CPUs with the suite; tests/unit test the stretching).
    sections = {
        "firewall": {
            "ironic_topic": "",
            "inspection_poll_interval": 1,
            "inspection_poll_max_share": 0,
        }
    }
    with (
        pxe_filters(tmp_path, lab, ironic, rabbitmq_server, redis_server, **sections) as filters,
        lab.sampling(next(iter(macs.values()))) as samples,
    ):
        leader = filters.in_place()
        for node in macs:
            api.request("PUT", f"/nodes/{node}/states/provision", {"target": "inspect"})
        seen = _first_times(
            macs, lambda n: api.get_node(n)["provision_state"] in INSPECTING, 10, "inspecting"
        )
        allowed = _first_times(
            macs, lambda n: filters.allows(leader, macs[n]), POLLED + 5, "allowed"
        )
        for node in macs:
            api.wait_for(node, lambda n: n["provision_state"] == "inspect wait")
        left, denied = {}, {}
        for node, mac in macs.items():
            left[node] = continue_inspection(api, mac)
            denied[node] = wait_for(
                lambda mac=mac: not filters.allows(leader, mac) and time.monotonic(),
                POLLED + 5,
                0.02,
                "denied",
            )
        after = sorted(allowed[n] - seen[n] for n in macs)
        gone = sorted(denied[n] - left[n] for n in macs)
        print(f"notifications off: allowed after {after}, denied after {gone} (s)")
        # Put into `inspect` together, the nodes meet the same phase of the leader's
        # polls: one sample of it (the median over phases is bench/pxe_filter.py's).
        assert max(after) < POLLED
        assert max(gone) < POLLED
        assert filters.in_place() is leader
        everything = samples.read()
        both = [sample for sample in everything if len(sample["servers"]) > 1]
        assert not both, f"two hosts answered one DISCOVER: {both[:5]}"
        assert any(sample["servers"] == [leader.address] for sample in everything)
        _metrics_and_status_show_the_leader(filters, leader)


def _metrics_and_status_show_the_leader(filters, leader) -> None:
    """Each host's metrics say its role; the leader's its polls, its lag (each node's
    entry, from provision_updated_at) and no notification; `inspector status` a line
    for each host."""
    metrics = {host.index: filters.metrics(host) for host in filters.lab.hosts}
    ours = metrics[leader.index]
    for index, samples in metrics.items():
        role = "leader" if index == leader.index else "follower"
        assert samples[f"inspector_pxe_filter_role{{'role': '{role}'}}"] == 1, samples
    assert ours["inspector_pxe_filter_leader_term{}"] >= 1
    assert ours["inspector_pxe_filter_ironic_seconds_count{'listing': 'nodes'}"] >= 2
    assert ours["inspector_pxe_filter_notifications_total{}"] == 0
    lags = ours["inspector_pxe_filter_lag_seconds_count{}"]
    assert lags >= NODES and ours["inspector_pxe_filter_lag_seconds_sum{}"] / lags < POLLED
    assert ours["inspector_pxe_filter_macs{'list': 'allowed'}"] == 0  # every node denied again
    status = filters.status(leader)
    rows = [line.split() for line in status.stdout.splitlines() if line.startswith("host")]
    assert sorted(row[0] for row in rows) == ["host1", "host2", "host3"], status.stdout
    assert sorted(row[4] for row in rows) == ["follower", "follower", "leader"], status.stdout


def _port_listings(ironic_dir) -> tuple[int, int]:
    """The listings of every port, and of the ports changed, Ironic answered so far (its
    log's access lines)."""
    log = (ironic_dir / "ironic" / "ironic.log").read_text(errors="replace")
    return (
        log.count("GET /v1/ports?fields=uuid%2Cnode_uuid%2Caddress&limit="),
        log.count("%2Ccreated_at&sort_key=created_at&sort_dir=desc&limit=50 "),
    )


def _full_listings_settled(ironic_dir, quiet: float) -> int:
    """The count of full port listings, once none came for `quiet` seconds."""
    last, since = _port_listings(ironic_dir)[0], time.monotonic()

    def settled() -> bool:
        nonlocal last, since
        now = _port_listings(ironic_dir)[0]
        if now != last:
            last, since = now, time.monotonic()
        return time.monotonic() - since >= quiet

    wait_for(settled, 30, 0.1, "the start-up listings of every port over")
    return last


def test_only_the_leader_lists_the_ports_the_others_follow_its_listing(
    tmp_path, lab, api, ironic, ironic_dir, rabbitmq_server, redis_server
):
    node, known = enrolled(api)
    period, full = 2.0, 6.0
    sections = {
        "firewall": {
            "ironic_topic": "",
            "blacklist_sync_period": period,
            "full_port_listing_period": full,
        }
    }
    with pxe_filters(tmp_path, lab, ironic, rabbitmq_server, redis_server, **sections) as filters:
        # Every host lists every port once as it starts (it needs them to open): counted
        # from when they all have the ports and no start-up listing is still under way.
        wait_for(
            lambda: all(known in listed(host, DRIVER, "blacklist") for host in lab.hosts),
            30,
            0.1,
            lambda: f"{known} blacklisted on every host\n{filters.logs()}",
        )
        _full_listings_settled(ironic_dir, quiet=1.0)
        mac = IronicAPI.new_mac()
        began, (fulls, changes) = time.monotonic(), _port_listings(ironic_dir)
        port = api.request("POST", "/ports", {"node_uuid": node["uuid"], "address": mac})
        wait_for(  # a listing of the changes finds it
            lambda: all(mac in listed(host, DRIVER, "blacklist") for host in lab.hosts),
            2 * period + 2,
            0.1,
            lambda: f"{mac} blacklisted on every host\n{filters.logs()}",
        )
        api.request("DELETE", f"/ports/{port['uuid']}")
        wait_for(  # only a full listing sees a deletion
            lambda: all(mac not in listed(host, DRIVER, "blacklist") for host in lab.hosts),
            2 * full,
            0.1,
            lambda: f"{mac} gone from every host\n{filters.logs()}",
        )
        wait_for(lambda: time.monotonic() - began > full, 2 * full, 0.1, "a full period")
        now = _port_listings(ironic_dir)
        fulls, changes = now[0] - fulls, now[1] - changes
        elapsed = time.monotonic() - began
        print(f"{fulls} full and {changes} changes' listings in {elapsed:.1f} s, 3 hosts")
        # One host listing each period (its clock is not ours: one more at the edges);
        # every host listing would make about three times as many.
        assert 1 <= fulls <= elapsed / full + 1, filters.logs()
        assert 1 <= changes <= elapsed / period + 1, filters.logs()
        assert filters.in_place() is not None


def test_ironic_down_the_firewall_stays_for_the_outage_budget_then_closes(
    tmp_path, lab, api, ironic, rabbitmq_server, redis_server
):
    node, mac = enrolled(api)
    retries, interval = 6, 1.0  # the outage budget: [ironic] max_retries x retry_interval
    address = urllib.parse.urlsplit(ironic[0])
    with TcpProxy(address.hostname, address.port) as proxy:
        sections = {
            "ironic": {
                "endpoint_override": f"http://127.0.0.1:{proxy.port}",
                "max_retries": retries,
                "retry_interval": interval,
            },
            "firewall": {"whitelist_sync_period": 1, "blacklist_sync_period": 1},
        }
        with pxe_filters(
            tmp_path, lab, ironic, rabbitmq_server, redis_server, **sections
        ) as filters:
            inspect(api, node)
            leader = wait_for(
                lambda: (host := filters.in_place()) and filters.allows(host, mac) and host,
                10,
                0.02,
                "the node allowed",
            )
            proxy.cut()  # Ironic unreachable to the filters: connections refused
            down = time.monotonic()
            while time.monotonic() - down < retries * interval - 1:
                # The firewall's state, read back again and again through the outage.
                assert filters.in_place() is leader and filters.allows(leader, mac), filters.logs()
            closed = wait_for(
                lambda: not filters.open_hosts() and time.monotonic(),
                retries * interval + 10,
                0.1,
                lambda: f"every host closed\n{filters.logs()}",
            )
            print(f"Ironic down: every host closed {closed - down:.1f} s later")
            statuses = [process.wait(30) for process in filters.processes.values()]
            assert statuses == [1, 1, 1], filters.logs()
            assert "gave up on Ironic" in filters.logs()


def start_filter(cluster, host):
    """`inspector pxe-filter` (whitelist_source = inspector) for host, with the
    deployment's configuration: the firewall of our own introspections."""
    path = cluster.tmp_path / f"pxe-filter-{host.index}.conf"
    options = worker_options(host, DRIVER, {"pxe_filter": {"whitelist_source": "inspector"}})
    path.write_text(render_config(options))
    args = [*INSPECTOR, "pxe-filter", "--config-file", str(cluster.config_path)]
    return cluster._spawn("pxe-filter", [*args, "--config-file", str(path)])


def test_our_introspection_is_answered_by_one_pxe_filter_host(
    tmp_path, lab, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    node = ironic_api.enroll(macs=1)
    mac = ironic_api.node_ports(node["uuid"])[0]["address"]
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        apis=1,
        workers=1,
        # The whitelist from the workers' announcements alone: the channel must carry it.
        options=DHCP_OPTIONS,
    ) as cluster:
        filters = [start_filter(cluster, host) for host in lab.hosts]
        leader = wait_for(
            lambda: (
                all(is_filtered(host, DRIVER) for host in lab.hosts)
                and len(opened := [h for h in lab.hosts if is_open(h, DRIVER)]) == 1
                and opened[0]
            ),
            30,
            message=lambda: f"one pxe-filter host open\n{cluster.logs()}",
        )
        start(cluster, node["uuid"])
        wait_for(
            lambda: mac in listed(leader, DRIVER, "whitelist"),
            10,
            message=lambda: (
                f"{mac} whitelisted through the workers' announcement\n{cluster.logs()}"
            ),
        )
        lease = lab.lease(mac)
        assert lease is not None and lease["server"] == leader.address, lease
        assert not any(host.heard(mac) for host in lab.hosts if host is not leader)
        status = cluster.run("status", "--wait", "2")
        rows = [line.split() for line in status.stdout.splitlines() if line.startswith("host")]
        assert sorted(row[0] for row in rows) == ["host1", "host2", "host3"], status.stdout
        assert [row[3] for row in rows].count("open") == 1, status.stdout
        assert all(process.alive() for process in filters)
