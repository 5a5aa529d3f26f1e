"""Which DLM a process accepts: the HA guard of `inspector api|worker` (memory://
refused, memcached:// accepted with its caveat), the tooz schemes whose
drivers cannot serve, a missing client library, and each driver's lease options."""

import pathlib
import subprocess
import sys
import urllib.parse

import pytest

from inspector import conf as config
from inspector.cmd import roles
from inspector.coordination import backends, connect
from inspector.errors import ConfigError

ROOT = pathlib.Path(__file__).parents[2]


def load(tmp_path, backend_url: str, **coordination) -> object:
    lines = [
        "[queue]",
        "transport_url = amqp://guest:guest@127.0.0.1:5672//",
        "[coordination]",
        f"backend_url = {backend_url}",
        *(f"{key} = {value}" for key, value in coordination.items()),
    ]
    path = tmp_path / "inspector.conf"
    path.write_text("\n".join(lines) + "\n")
    return config.load(["--config-file", str(path)])


def test_single_host_defaults_to_false():
    assert config.load([]).coordination.single_host is False


@pytest.mark.parametrize("role", ["api", "worker"])
def test_memcached_is_accepted_where_hosts_may_be_several_saying_what_it_cannot_promise(
    tmp_path, role, caplog
):
    """ironic-inspector's split mode ran on memcached: its files start, with a warning."""
    conf = load(tmp_path, "memcached://127.0.0.1:11211")
    roles.check_shared_backends(conf, role)
    warned = [r.getMessage() for r in caplog.records if "memcached" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "[coordination] backend_url = memcached://" in warned[0]
    assert "lost when memcached evicts it (full) or restarts" in warned[0]
    assert "two processes may each lead a singleton" in warned[0]
    assert "Redis, etcd or ZooKeeper" in warned[0]


@pytest.mark.parametrize("role", ["api", "worker"])
def test_memcached_on_a_single_host_is_not_warned_about(tmp_path, role, caplog):
    conf = load(tmp_path, "memcached://127.0.0.1:11211", single_host="true")
    roles.check_shared_backends(conf, role)
    assert not [r for r in caplog.records if "unreplicated" in r.getMessage()]


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379",
        "etcd3+http://127.0.0.1:2379",
        "etcd3+https://127.0.0.1:2379",
        "zookeeper://127.0.0.1:2181",
        "kazoo://127.0.0.1:2181",
    ],
)
def test_replicable_dlms_need_no_single_host(tmp_path, url):
    roles.check_shared_backends(load(tmp_path, url), "worker")


def test_single_host_does_not_let_memory_through(tmp_path):
    conf = load(tmp_path, "memory://", single_host="true")
    with pytest.raises(ConfigError, match="memory:// only works inside one process"):
        roles.check_shared_backends(conf, "worker")


@pytest.mark.parametrize(
    "url",
    [
        "ipc://",
        "mysql://inspector@db/inspector",
        "postgresql://inspector@db/inspector",
        "kubernetes://",
        "rediss://127.0.0.1:6379",
    ],
)
def test_drivers_that_cannot_serve_are_refused(tmp_path, url):
    scheme = url.split(":")[0]
    with pytest.raises(ConfigError) as refused:
        roles.check_shared_backends(load(tmp_path, url, single_host="true"), "worker")
    assert f"[coordination] backend_url = {scheme}://... is not a DLM" in refused.value.message
    # `inspector all` meets the same refusal when it connects.
    with pytest.raises(ConfigError, match="is not a DLM"):
        connect(url, "member")


@pytest.mark.parametrize(
    ("url", "module", "extra"),
    [
        ("etcd3+http://127.0.0.1:2379", "etcd3gw", "etcd"),
        ("zookeeper://127.0.0.1:2181", "kazoo", "zookeeper"),
        ("memcached://127.0.0.1:11211", "pymemcache", "memcached"),
    ],
)
def test_a_missing_client_library_names_the_extra(monkeypatch, tmp_path, url, module, extra):
    find_spec = backends.importlib.util.find_spec
    monkeypatch.setattr(
        backends.importlib.util,
        "find_spec",
        lambda name, *args: None if name == module else find_spec(name, *args),
    )
    with pytest.raises(ConfigError) as refused:
        connect(url, "member")
    assert f"needs the Python package {module}" in refused.value.message
    assert f"pip install '.[{extra}]' in a checkout" in refused.value.message
    assert f"'ironic-ha-inspector[{extra}]' from its wheel" in refused.value.message
    conf = load(tmp_path, url, single_host="true")
    with pytest.raises(ConfigError, match=f"ironic-ha-inspector\\[{extra}\\]"):
        roles.check_shared_backends(conf, "worker")


REDIS_LEASE = {"lock_timeout": "3", "membership_timeout": "3"}
REDIS_CALLS = {"socket_timeout": "2.0", "socket_connect_timeout": "2.0"}


def options(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # A call waits two thirds of the lease at most (the client's socket timeout).
        ("redis://h:6379", {**REDIS_LEASE, **REDIS_CALLS}),
        # etcd3gw and pymemcache take whole seconds.
        ("etcd3+http://h:2379", {"lock_timeout": "3", "membership_timeout": "3", "timeout": "2"}),
        ("etcd3+https://h:2379", {"lock_timeout": "3", "membership_timeout": "3", "timeout": "2"}),
        # ZooKeeper's lease is the session's.
        ("zookeeper://h:2181", {"timeout": "3"}),
        # memcached's clock ticks once a second: a second more keeps the whole lease.
        ("memcached://h:11211", {"lock_timeout": "4", "membership_timeout": "4", "timeout": "2"}),
        # What the URL sets wins.
        (
            "redis://h:6379?lock_timeout=9&socket_timeout=0.5",
            {**REDIS_LEASE, **REDIS_CALLS, "lock_timeout": "9", "socket_timeout": "0.5"},
        ),
        ("zookeeper://h:2181?timeout=20", {"timeout": "20"}),
        ("file:///tmp/locks", {}),
    ],
)
def test_each_driver_gets_its_lease_options(url, expected):
    assert options(backends.with_lease(url, 3)) == expected


def test_the_guard_stops_the_worker_before_it_opens_anything(tmp_path):
    """`inspector worker` with the in-process DLM: exit status 2 and the message, before
    any backend is tried (none of these answers)."""
    path = tmp_path / "inspector.conf"
    path.write_text(
        "[database]\nconnection = postgresql+psycopg://nobody@127.0.0.1:1/none\n"
        "[queue]\ntransport_url = redis://127.0.0.1:1/0\n"
        "[coordination]\nbackend_url = memory://\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "inspector.cmd", "worker", "--config-file", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "[coordination] backend_url = memory:// only works inside one process" in (result.stderr)
