"""Hostile input against `inspector all` and a real Ironic, as an attacker or a careless
operator sends it: raw framing, version headers, nesting, encodings, node ids, wrong
types, oversized inventories, and a property-based layer (Hypothesis) that mutates real
ramdisk payloads and rule documents. Every answer is a 2xx or a 4xx, never a 5xx nor a
hang; the process survives; every introspection that was accepted ends; a canary
introspection still finishes afterwards; and no secret that was posted reaches the log.
"""

import contextlib
import copy
import json
import pathlib
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.api import server
from tests import fixtures, wire
from tests.conftest import IronicAPI
from tests.integration.cluster import free_port, render_config, wait_for

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Seconds any one answer may take: past it, the request hung.
ANSWER_TIMEOUT = 15.0
#: What the tests post as secrets: none of these may reach the log.
SECRETS = ("hostile-Secret-ipmi-7f3a", "hostile-Secret-token-91c2", "hostile-RAMDISK-LOGS-5d8e")
#: Seconds an accepted introspection gets to end.
END_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def service(tmp_path_factory, ironic_url) -> Iterator[dict[str, Any]]:
    """`inspector all` (SQLite, in-process queue and locks, noauth, discovery on)."""
    tmp = tmp_path_factory.mktemp("hostile")
    port = free_port()
    config = tmp / "inspector.conf"
    config.write_text(
        render_config(
            {
                "DEFAULT": {
                    "state_path": tmp / "state",
                    "listen_address": "127.0.0.1",
                    "listen_port": port,
                    "debug": "true",
                    "log_file": tmp / "inspector.log",
                },
                "ironic": {"auth_type": "none", "endpoint_override": ironic_url},
                "processing": {
                    "store_data": "database",
                    "node_not_found_hook": "enroll",
                    "add_ports": "all",
                },
                "discovery": {"enroll_node_driver": "fake-hardware"},
            }
        )
    )
    (tmp / "state").mkdir()
    output = (tmp / "output").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "inspector.cmd", "all", "--config-file", str(config)],
        cwd=ROOT,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def answers():
        with contextlib.suppress(requests.RequestException):
            return requests.get(url, timeout=2).ok
        return False

    try:
        wait_for(answers, 30, 0.1, "inspector all answering")
        yield {"url": url, "port": port, "process": process, "log": tmp / "inspector.log"}
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        output.close()


def raw(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read the first answer's status, headers (lower-case names) and
    body; a hang fails the test."""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT) as sock:
        with contextlib.suppress(OSError):  # the server may close before all is sent
            sock.sendall(data)
        return wire.answer(sock)


def chunked(path: str, body: bytes, size_line: bytes | None = None) -> bytes:
    size = size_line if size_line is not None else f"{len(body):x}".encode()
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n".encode()
        + size
        + b"\r\n"
        + body
        + b"\r\n0\r\n\r\n"
    )


def with_length(method: str, path: str, body: bytes, headers: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"{headers}Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def get_with(header: str, path: str = "/") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{header}\r\n\r\n".encode("utf-8", "surrogatepass")


RULE = {"conditions": [], "actions": [{"action": "fail", "message": "x"}]}
#: A second Content-Length, other than the first (2).
LENGTH_3 = "Content-Length: 3\r\n"
BIG = 2 * 1024 * 1024
DEEP = b"[" * 50_000 + b"]" * 50_000


def continue_with(change) -> bytes:
    payload = fixtures.load(fixtures.IPA)
    change(payload)
    return json.dumps(payload).encode()


def _set(path: list, value):
    def change(payload):
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def nic(number: int) -> dict:
    """A NIC with a MAC of its own."""
    mac = "02:" + ":".join(f"{(number >> shift) & 255:02x}" for shift in (24, 16, 8, 0))
    return {"name": f"eth{number}", "mac_address": mac, "ipv4_address": "198.18.0.1"}


#: (name, request bytes, the statuses allowed)
CASES = [
    ("chunked rule over the limit", chunked("/v1/rules", b'{"d": "' + b"a" * BIG + b'"}'), {413}),
    (
        "chunked continue over its limit",
        chunked("/v1/continue", b"A" * (64 * 1024 * 1024 + 10)),
        {413},
    ),
    ("chunk size past any integer", chunked("/v1/rules", b"{}", b"f" * 40), {400, 413}),
    ("chunk size not hex", chunked("/v1/rules", b"{}", b"zz"), {400}),
    (
        "content-length not a number",
        with_length("POST", "/v1/rules", b"{}").replace(
            b"Content-Length: 2", b"Content-Length: " + b"9" * 5000
        ),
        {400},
    ),
    ("content-lengths that differ", with_length("POST", "/v1/rules", b"{}", LENGTH_3), {400}),
    (
        "content-length of 24 digits",
        with_length("POST", "/v1/rules", b"{}").replace(b"Length: 2", b"Length: " + b"9" * 24),
        {400},
    ),
    (
        "content-length past every limit",
        with_length("POST", "/v1/continue", b"{}").replace(b"Length: 2", b"Length: 67108865"),
        {413},
    ),
    (
        "content-length and chunked",
        chunked("/v1/rules", b"{}").replace(b"\r\n\r\n", b"\r\nContent-Length: 9\r\n\r\n", 1),
        {400},
    ),
    ("headers over 64 KiB", get_with("X-Big: " + "a" * (65 * 1024)), {413}),
    (
        "version of 5000 digits",
        get_with("X-OpenStack-Ironic-Inspector-API-Version: 1." + "1" * 5000),
        {400},
    ),
    ("version 1.99999999", get_with("X-OpenStack-Ironic-Inspector-API-Version: 1.99999999"), {406}),
    (
        "standard version header huge",
        get_with("OpenStack-API-Version: baremetal-introspection 1." + "9" * 5000),
        {400},
    ),
    (
        "continue nested 50,000 deep",
        with_length("POST", "/v1/continue", b'{"inventory": ' + DEEP + b"}"),
        {400},
    ),
    (
        "rule nested 50,000 deep",
        with_length("POST", "/v1/rules", b'{"conditions": ' + DEEP + b"}"),
        {400},
    ),
    (
        "lone surrogate in a rule",
        with_length(
            "POST",
            "/v1/rules",
            b'{"conditions": [], "actions": [{"action": "fail", "message": "\\ud800"}]}',
        ),
        {400},
    ),
    (
        "lone surrogate in ramdisk data",
        with_length(
            "POST",
            "/v1/continue",
            continue_with(_set(["inventory", "bmc_address"], "X")).replace(b'"X"', b'"\\udfff"'),
        ),
        {400},
    ),
    ("invalid UTF-8", with_length("POST", "/v1/rules", b'{"description": "\xff\xfe"}'), {400}),
    ("node id that is an Ironic route", get_with("Accept: */*", "/v1/introspection/detail"), {404}),
    (
        "node id no name may be",
        get_with("Accept: */*", "/v1/introspection/no%20such%20node"),
        {400},
    ),
    (
        "rule pattern with a huge repetition",
        with_length(
            "POST",
            "/v1/rules",
            json.dumps(
                {
                    "conditions": [
                        {
                            "op": "matches",
                            "field": "data://inventory.bmc_address",
                            "value": "a{99999999999}",
                        }
                    ],
                    "actions": [{"action": "fail", "message": "x"}],
                }
            ).encode(),
        ),
        {400},
    ),
    (
        "disks as an object",
        with_length(
            "POST", "/v1/continue", continue_with(_set(["inventory", "disks"], {"sda": {}}))
        ),
        {400},
    ),
    (
        "a disk that is null",
        with_length("POST", "/v1/continue", continue_with(_set(["inventory", "disks"], [None]))),
        {400},
    ),
    (
        "a disk that is a list",
        with_length("POST", "/v1/continue", continue_with(_set(["inventory", "disks"], [[1, 2]]))),
        {400},
    ),
    (
        "boot as a list",
        with_length("POST", "/v1/continue", continue_with(_set(["inventory", "boot"], ["pxe"]))),
        {400},
    ),
    (
        "50,000 NICs",
        with_length(
            "POST",
            "/v1/continue",
            continue_with(_set(["inventory", "interfaces"], [nic(i) for i in range(50_000)])),
        ),
        {400},
    ),
]


@pytest.mark.parametrize(("name", "request_bytes", "allowed"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_of_hostile_request_gets_its_4xx(service, name, request_bytes, allowed):
    status, headers, body = raw(service["port"], request_bytes)
    assert status in allowed, (name, status, body[:300])
    # The API's format, the server's own refusals included.
    assert headers["content-type"] == "application/json", headers
    assert headers["x-openstack-request-id"].startswith("req-"), headers
    assert headers["x-openstack-ironic-inspector-api-maximum-version"] == "1.19", headers
    assert json.loads(body)["error"]["message"], body[:300]
    assert service["process"].poll() is None, "inspector all died"


def test_a_body_that_stops_half_way_is_400_and_one_log_line(service):
    """6 of 100 bytes, then silence: a 400 once the server's read timeout passes."""
    request = with_length("POST", "/v1/rules", b'{"a":1').replace(b"Length: 6", b"Length: 100")
    status, _, body = raw(service["port"], request)
    assert status == 400, body
    assert b"stopped short of its Content-Length" in body
    log = service["log"].read_text(errors="replace")
    assert log.count("stopped short of its 100 bytes") == 1
    assert "cannot read from timed out object" not in log


#: Clients that connect and send nothing, and clients that send part of their headers.
SILENT, SLOW = 40, 24


def test_slow_clients_do_not_stall_the_api(service):
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        for number in range(SILENT + SLOW):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", service["port"])))
            if number >= SILENT:
                sock.sendall(b"GET /v1 HTTP/1.1\r\nHost: x\r\n")
        answer = requests.get(f"{service['url']}/v1/introspection", timeout=ANSWER_TIMEOUT)
        took = time.monotonic() - started
    assert answer.status_code == 200
    # Behind a slow client it would have waited for the server's read timeout.
    assert took < server.TIMEOUT / 2, f"{took:.1f} s"


# -- the property-based layer -------------------------------------------------------------

#: JSON values a careless or hostile client sends where something else was expected.
WEIRD_TEXT = st.sampled_from(
    [
        "",
        "\x00",
        "\ud800",
        "a" * 5000,
        "{data}",
        "{data.__class__}",
        "%s%s%n",
        "../../etc/passwd",
        "ff:ff:ff:ff:ff:ff",
        "not-a-mac",
        "1" * 400,
        SECRETS[0],
    ]
)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | WEIRD_TEXT
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def paths_of(value, prefix=()) -> list[tuple]:
    """Every path to a value inside a JSON document (dict keys and list indexes)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:8]):
            found += paths_of(item, (*prefix, index))
    return found


@st.composite
def mutated(draw, document):
    """The document with a few of its values replaced, removed or wrapped."""
    result = copy.deepcopy(document)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in paths_of(result) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = result
        for key in path[:-1]:
            parent = parent[key]
        how = draw(st.sampled_from(["replace", "remove", "wrap"]))
        if how == "remove":
            del parent[path[-1]]
        elif how == "wrap":
            parent[path[-1]] = [parent[path[-1]]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return result


RULES = [
    {
        "description": "set properties from the inventory",
        "conditions": [{"op": "ge", "field": "memory_mb", "value": 1024}],
        "actions": [
            {
                "action": "set-attribute",
                "path": "/extra/vendor",
                "value": "{data[inventory][system_vendor][manufacturer]}",
            },
            {"action": "set-capability", "name": "hostile", "value": "yes"},
        ],
    },
    {
        "description": "match interfaces",
        "conditions": [
            {
                "op": "matches",
                "field": "data://inventory.interfaces[*].name",
                "value": "(e|a)+$",
                "multiple": "any",
            },
            {
                "op": "contains",
                "field": "data://inventory.system_vendor.product_name",
                "value": "a",
            },
        ],
        "actions": [{"action": "add-trait", "name": "CUSTOM_HOSTILE"}],
    },
]


def post_json(url: str, path: str, document) -> requests.Response:
    body = json.dumps(document, allow_nan=False).encode("utf-8", "surrogatepass")
    return requests.post(
        f"{url}{path}",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=ANSWER_TIMEOUT,
    )


@pytest.fixture(scope="module")
def accepted() -> list[str]:
    """The nodes whose mutated ramdisk data was accepted: each must end."""
    return []


@pytest.fixture(scope="module")
def used_macs() -> list[str]:
    return []


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_rule_documents_never_get_a_5xx(service, data):
    document = data.draw(mutated(data.draw(st.sampled_from(RULES))))
    answer = post_json(service["url"], "/v1/rules", document)
    assert answer.status_code < 500, (document, answer.text)
    assert service["process"].poll() is None, "inspector all died"


_counter = iter(range(1, 1_000_000))


def fresh_identity(payload: dict, used: list[str]) -> str:
    """A MAC and a BMC address no other node has (Ironic's MACs are unique)."""
    number = next(_counter)
    mac = "02:" + ":".join(uuid.uuid4().hex[i : i + 2] for i in range(0, 10, 2))
    used.append(mac)
    inventory = payload.get("inventory")
    if isinstance(inventory, dict):
        for interface in inventory.get("interfaces") or []:
            if isinstance(interface, dict):
                interface["mac_address"] = mac
        inventory["bmc_address"] = f"198.18.{number // 250}.{number % 250 + 1}"
    return mac


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_ramdisk_data_never_gets_a_5xx(service, data, accepted, used_macs):
    base = fixtures.load(fixtures.IPA)
    base["inventory"]["bmc_password"] = SECRETS[0]
    base["token"] = SECRETS[1]
    payload = data.draw(mutated(base))
    if data.draw(st.booleans()):
        fresh_identity(payload, used_macs)
    if data.draw(st.booleans()):
        payload["logs"] = SECRETS[2]
    answer = post_json(service["url"], "/v1/continue", payload)
    assert answer.status_code < 500, (payload, answer.text)
    if answer.ok:
        accepted.append(answer.json()["uuid"])
    assert service["process"].poll() is None, "inspector all died"


def test_every_accepted_introspection_ends(service, accepted):
    url = service["url"]
    # The property layer reached the workers, not only the door.
    assert len(accepted) >= 5, f"only {len(accepted)} mutated payloads were accepted"
    print(f"{len(accepted)} mutated payloads accepted")

    def ended(node):
        answer = requests.get(f"{url}/v1/introspection/{node}", timeout=ANSWER_TIMEOUT)
        return answer.ok and answer.json()["finished"]

    for node in accepted:
        wait_for(lambda node=node: ended(node), END_TIMEOUT, 0.2, f"the introspection of {node}")


def test_a_canary_introspection_still_finishes(service, ironic_api):
    url = service["url"]
    assert requests.delete(f"{url}/v1/rules", timeout=ANSWER_TIMEOUT).status_code == 204
    node = ironic_api.enroll()["uuid"]
    assert (
        requests.post(f"{url}/v1/introspection/{node}", timeout=ANSWER_TIMEOUT).status_code == 202
    )
    wait_for(
        lambda: (
            requests.get(f"{url}/v1/introspection/{node}", timeout=5).json()["state"] == "waiting"
        ),
        60,
        0.1,
        "the canary waiting",
    )
    mac = ironic_api.node_ports(node)[0]["address"]
    payload = fixtures.load(fixtures.IPA)
    for interface in payload["inventory"]["interfaces"]:
        interface["mac_address"] = mac
    payload["inventory"]["bmc_address"] = "198.19.255.254"
    assert post_json(url, "/v1/continue", payload).status_code == 200
    final = wait_for(
        lambda: (
            (s := requests.get(f"{url}/v1/introspection/{node}", timeout=5).json())["finished"]
            and s
        ),
        60,
        0.1,
        "the canary finishing",
    )
    assert final["state"] == "finished", final
    assert service["process"].poll() is None


def test_no_secret_reaches_the_log(service):
    text = service["log"].read_text(errors="replace")
    assert text, "the service wrote no log"
    for secret in SECRETS:
        assert secret not in text, f"{secret} is in the log"


@pytest.fixture(scope="module", autouse=True)
def forget_discovered_nodes(ironic_url, used_macs):
    """Delete the nodes discovery enrolled for the mutated payloads, by their MACs."""
    yield
    api = IronicAPI(ironic_url)
    try:
        for mac in used_macs:
            for port in api.request("GET", f"/ports?address={mac}&fields=node_uuid")["ports"]:
                api.track(port["node_uuid"])
        api.delete_nodes()
    finally:
        api.session.close()
