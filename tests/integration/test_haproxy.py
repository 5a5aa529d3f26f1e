"""HAProxy in front of two `inspector api` processes, as in production.

The proxy is a real `haproxy` (Debian package; from PATH, or /usr/sbin where Debian puts
it) started by the test in the foreground (-db) on free ports of 127.0.0.1, from a config
rendered like etc/inspector/haproxy.cfg: round robin, `option httpchk GET /healthcheck`,
X-Forwarded-For/Proto/Port set by the proxy, a TLS listener and a path prefix. The APIs run
with `[oslo_middleware] enable_proxy_headers_parsing = true`. A client through the proxy
must see one consistent state, whichever process answers, and links that name the proxy.
"""

import dataclasses
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import string
import subprocess
import uuid

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from ironic_inspector_client import ClientV1
from keystoneauth1 import session as ks_session

from tests.conftest import service_unavailable
from tests.integration.cluster import ROOT, Deployment, free_port, ipa_payload, wait_for

pytestmark = pytest.mark.integration

#: The path prefix the proxy serves the API under (X-Forwarded-Prefix).
PREFIX = "/baremetal-introspection"
#: Reads that must all agree.
READS = 20
#: Seconds haproxy gets to start, see both back ends healthy, or leave after SIGTERM.
HAPROXY_TIMEOUT = 15.0
BACKEND_HEADER = "X-Inspector-Backend"
#: An address the client claims to be (never contacted): only the proxy's word counts.
SPOOFED_ADDRESS = "203.0.113.9"

TEMPLATE = string.Template(
    r"""# Rendered by tests/integration/test_haproxy.py, after etc/inspector/haproxy.cfg.
global
    maxconn 256
    log stderr format short local0 info
    stats socket $stats_socket mode 600 level admin

defaults
    mode http
    log global
    option httplog
    option redispatch
    retries 3
    timeout connect 2s
    timeout http-request 10s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 5s
    timeout check 2s

frontend inspector
    bind 127.0.0.1:$http_port
    bind 127.0.0.1:$https_port ssl crt $certificate
    option forwardfor
    http-request set-header X-Forwarded-Proto https if { ssl_fc }
    http-request set-header X-Forwarded-Proto http if !{ ssl_fc }
    http-request set-header X-Forwarded-Port %[dst_port]
    http-request del-header X-Forwarded-Host
    http-request del-header X-Forwarded-Prefix
    acl inspector_prefix path_beg $prefix
    http-request set-header X-Forwarded-Prefix $prefix if inspector_prefix
    http-request replace-path ^$prefix/?(.*) /\1 if inspector_prefix
    default_backend inspector_api

backend inspector_api
    balance roundrobin
    option httpchk GET /healthcheck
    http-check expect status 200
    default-server inter 300ms fall 2 rise 1
    # Which process answered: the test checks that both did.
    http-response set-header $backend_header %s
$servers
"""
)


def find_haproxy() -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
    binary = shutil.which("haproxy", path=path)
    if binary is None:
        service_unavailable("haproxy is not installed: apt-get install haproxy")
    return binary


def self_signed_certificate(directory) -> tuple[str, str]:
    """(PEM with certificate and key, for haproxy; certificate alone, for the client)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = certificate.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    bundle, cert_only = directory / "haproxy.pem", directory / "ca.pem"
    bundle.write_bytes(cert_pem + key_pem)
    bundle.chmod(0o600)
    cert_only.write_bytes(cert_pem)
    return str(bundle), str(cert_only)


@dataclasses.dataclass
class HAProxy:
    """A haproxy child process in the foreground; stopped by its pid."""

    binary: str
    directory: object
    backends: dict[str, int]  # server name -> port on 127.0.0.1

    def __post_init__(self) -> None:
        self.http_port = free_port()
        self.https_port = free_port()
        self.stats_socket = self.directory / "haproxy.sock"
        self.certificate, self.ca = self_signed_certificate(self.directory)
        self.config = self.directory / "haproxy.cfg"
        self.log_path = self.directory / "haproxy.log"
        self.process: subprocess.Popen | None = None
        servers = "\n".join(
            f"    server {name} 127.0.0.1:{port} check" for name, port in self.backends.items()
        )
        self.config.write_text(
            TEMPLATE.substitute(
                stats_socket=self.stats_socket,
                http_port=self.http_port,
                https_port=self.https_port,
                certificate=self.certificate,
                prefix=PREFIX,
                backend_header=BACKEND_HEADER,
                servers=servers,
            )
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def https_url(self) -> str:
        return f"https://127.0.0.1:{self.https_port}"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> None:
        check = subprocess.run(
            [self.binary, "-c", "-f", str(self.config)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert check.returncode == 0, f"haproxy -c: {check.stdout}{check.stderr}"
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [self.binary, "-db", "-f", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self.wait_servers(dict.fromkeys(self.backends, "UP"))

    def servers(self) -> dict[str, tuple[str, str]]:
        """Server name -> (status, last check) from the stats socket; {} before it exists."""
        if self.process is not None and self.process.poll() is not None:
            raise AssertionError(f"haproxy exited: {self.process.returncode}\n{self.log_text()}")
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.settimeout(5)
                sock.connect(str(self.stats_socket))
                sock.sendall(b"show stat\n")
                chunks = []
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
        except (FileNotFoundError, ConnectionRefusedError):
            return {}
        lines = b"".join(chunks).decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {
            row["svname"]: (row["status"], row["check_status"])
            for row in rows
            if row["pxname"] == "inspector_api" and row["svname"] in self.backends
        }

    def wait_servers(self, wanted: dict[str, str]) -> None:
        """Until each named server has the wanted status (UP after a passed check)."""

        def reached() -> bool:
            servers = self.servers()
            return all(
                name in servers
                and servers[name][0] == status
                and (status != "UP" or servers[name][1] == "L7OK")
                for name, status in wanted.items()
            )

        wait_for(
            reached,
            HAPROXY_TIMEOUT,
            message=lambda: f"haproxy servers {wanted} (now {self.servers()})\n{self.log_text()}",
        )

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=HAPROXY_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def haproxy_binary():
    return find_haproxy()


@pytest.fixture
def deployment(tmp_path, postgresql_url, rabbitmq_url, redis_url, queue_name, ironic_api):
    cluster = Deployment(
        tmp_path,
        database_url=postgresql_url,
        queue_url=rabbitmq_url,
        queue_name=queue_name,
        redis_url=redis_url,
        ironic_url=ironic_api.url,
        options={
            "oslo_middleware": {"enable_proxy_headers_parsing": True},
            "api": {"continue_allowed_networks": ["127.0.0.0/8"]},
        },
    )
    try:
        cluster.start(apis=2, workers=1)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def proxy(haproxy_binary, deployment, tmp_path):
    backends = {api.name: api.port for api in deployment.apis}
    haproxy = HAProxy(haproxy_binary, tmp_path, backends)
    try:
        haproxy.start()
        yield haproxy
    finally:
        haproxy.stop()
        print(f"----- haproxy {haproxy.log_path}\n{haproxy.log_text()[-5000:]}")


def read_status(proxy, node):
    """Status documents read through the proxy, with the back end that served each."""
    reads = []
    for _ in range(READS):
        answer = requests.get(f"{proxy.url}/v1/introspection/{node}", timeout=10)
        assert answer.status_code == 200, answer.text
        reads.append((answer.headers[BACKEND_HEADER], answer.json()))
    return reads


def test_haproxy_example_config_is_valid(haproxy_binary):
    example = ROOT / "etc" / "inspector" / "haproxy.cfg"
    result = subprocess.run(
        [haproxy_binary, "-c", "-f", str(example)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = example.read_text()
    for line in ("option httpchk GET /healthcheck", "option forwardfor", "X-Forwarded-Proto"):
        assert line in text


def test_consistent_state_through_haproxy(proxy, deployment, ironic_api):
    root = requests.get(proxy.url + "/", timeout=10)
    assert root.status_code == 200
    assert root.json()["versions"][0]["links"][0]["href"] == f"{proxy.url}/v1"
    assert root.headers["X-OpenStack-Ironic-Inspector-API-Maximum-Version"] == "1.19"
    resources = requests.get(proxy.url + "/v1", timeout=10).json()["resources"]
    for resource in resources:
        assert resource["links"][0]["href"] == f"{proxy.url}/v1/{resource['name']}"

    client = ClientV1(inspector_url=proxy.url, api_version="1.18")
    node = ironic_api.enroll()["uuid"]
    client.introspect(node)
    # Right after the 202, whichever process answers knows the introspection.
    started = read_status(proxy, node)
    assert {backend for backend, _ in started} == set(proxy.backends)
    assert {status["state"] for _, status in started} <= {"starting", "waiting"}
    assert len({status["started_at"] for _, status in started}) == 1

    wait_for(
        lambda: client.get_status(node)["state"] == "waiting",
        30,
        message=lambda: f"{node} waiting\n{deployment.logs()}",
    )
    waiting = read_status(proxy, node)
    assert {backend for backend, _ in waiting} == set(proxy.backends)
    documents = {json.dumps(status, sort_keys=True) for _, status in waiting}
    assert len(documents) == 1, documents
    status = waiting[0][1]
    assert status["state"] == "waiting"
    assert status["links"][0]["href"] == f"{proxy.url}/v1/introspection/{node}"

    payload = ipa_payload(port["address"] for port in ironic_api.node_ports(node))
    spoofed = {"X-Forwarded-For": SPOOFED_ADDRESS}
    # Straight to a back end, the claimed address counts (it trusts its proxy's header)...
    direct = requests.post(
        f"{deployment.apis[0].url}/v1/continue", json=payload, headers=spoofed, timeout=10
    )
    assert direct.status_code == 403, direct.text
    assert SPOOFED_ADDRESS in direct.json()["error"]["message"]
    # ...through the proxy, the address the proxy saw (127.0.0.1, allowed) is the last one.
    answer = requests.post(f"{proxy.url}/v1/continue", json=payload, headers=spoofed, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"uuid": node}

    finished = client.wait_for_finish([node], retry_interval=0.1, max_retries=300)[node]
    assert finished["state"] == "finished", finished
    reads = read_status(proxy, node)
    assert {backend for backend, _ in reads} == set(proxy.backends)
    assert all(status == finished for _, status in reads)
    assert client.get_data(node)["inventory"]["interfaces"] == payload["inventory"]["interfaces"]


def test_prefix_tls_and_failover(proxy, deployment):
    # Served under a path prefix: the links keep it, and the client works through it.
    root = requests.get(f"{proxy.url}{PREFIX}/", timeout=10)
    assert root.status_code == 200, root.text
    assert root.json()["versions"][0]["links"][0]["href"] == f"{proxy.url}{PREFIX}/v1"
    prefixed = ClientV1(inspector_url=proxy.url + PREFIX, api_version="1.18")
    assert prefixed.server_api_versions() == ((1, 0), (1, 19))
    rule = prefixed.rules.from_json(
        {"actions": [{"action": "fail", "message": "example"}], "description": "prefix"}
    )
    # Rule links are paths (as ironic-inspector's), with the prefix.
    assert rule["links"][0]["href"] == f"{PREFIX}/v1/rules/{rule['uuid']}"
    assert prefixed.rules.get(rule["uuid"])["description"] == "prefix"

    # TLS ends at the proxy: X-Forwarded-Proto makes the links https.
    tls = requests.get(proxy.https_url + "/", timeout=10, verify=proxy.ca)
    assert tls.json()["versions"][0]["links"][0]["href"] == f"{proxy.https_url}/v1"
    secure = ClientV1(
        inspector_url=proxy.https_url,
        api_version="1.18",
        session=ks_session.Session(verify=proxy.ca),
    )
    assert rule["uuid"] in {r["uuid"] for r in secure.rules.get_all()}

    # What a client claims about the proxy is replaced or dropped by the proxy.
    claims = {
        "X-Forwarded-Host": "attacker.example",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-Prefix": "/elsewhere",
        "X-Forwarded-Port": "1",
    }
    answer = requests.get(proxy.url + "/", headers=claims, timeout=10)
    assert answer.json()["versions"][0]["links"][0]["href"] == f"{proxy.url}/v1"

    # One API process stops: the proxy's health check takes it out, and every read is
    # answered by the other one.
    first, second = deployment.apis
    assert first.stop() == 0
    proxy.wait_servers({first.name: "DOWN", second.name: "UP"})
    for _ in range(READS):
        answer = requests.get(f"{proxy.url}/v1/rules/{rule['uuid']}", timeout=10)
        assert answer.status_code == 200, answer.text
        assert answer.headers[BACKEND_HEADER] == second.name
    health = requests.get(f"{proxy.url}/healthcheck", timeout=10)
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    prefixed.rules.delete(rule["uuid"])
    assert requests.get(f"{proxy.url}/v1/rules/{uuid.uuid4()}", timeout=10).status_code == 404
