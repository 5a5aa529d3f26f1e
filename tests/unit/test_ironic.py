"""The Ironic client's retry policy and error mapping, on an injected fake connection."""

import json
import socket
import threading
from typing import Any

import pytest
from keystoneauth1 import exceptions as ks_exceptions

from inspector.errors import (
    BadRequest,
    ConfigError,
    Conflict,
    InspectorError,
    NotFound,
    ServiceUnavailable,
)
from inspector.ironic import Ironic, IronicNode, IronicPort, bmc_addresses, connect, model
from inspector.ironic.connection import Reply
from inspector.ironic.failures import HttpError, Unreachable

NODE = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
LOCKED = "Node 1be26c0b is locked by host conductor-1, please retry after the current operation"


class RecordingEvent(threading.Event):
    """A shutdown event whose wait returns at once and remembers how long it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)  # type: ignore[arg-type]
        return self.is_set()


class FakeConnection:
    """The connection's send, answering from a script of Replies and exceptions, as the
    real one does (an HTTP error is a Reply; no answer is an exception)."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.requests: list[tuple[str, tuple, dict]] = []

    def send(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        sent = {"json": body} if body is not None else {}
        if params:
            sent["params"] = params
        self.requests.append((method.lower(), (path,), sent))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def response(status: int, body: Any = None) -> Reply:
    """Ironic's answer (no body when body is None)."""
    return Reply(status, b"" if body is None else json.dumps(body).encode())


def ironic_error(status: int, message: str = "Oops") -> Reply:
    """An error as Ironic sends it: the message JSON-encoded inside error_message."""
    return response(status, {"error_message": json.dumps({"faultstring": message})})


def a_node(**fields: Any) -> Reply:
    """Ironic's 200 answer with a node, as GET and PATCH /v1/nodes/{ident} send it."""
    values = {"uuid": NODE, "name": "node-1", "provision_state": "manageable"}
    values.update(driver="fake-hardware", power_state="power off", maintenance=False)
    return response(200, {**values, **fields})


#: What a request without body or query sends besides its method and path (the headers
#: are the connection's, tested below on a real HTTP server).
SENT: dict = {}


def sent(ironic: Ironic) -> list[tuple[str, tuple, dict]]:
    """(method, (path,), {"json": body, "params": query}) of every request."""
    return ironic._connection.requests


@pytest.fixture
def conf(conf):
    conf.set_override("max_retries", 3, group="ironic")
    conf.set_override("retry_interval", 2.5, group="ironic")
    return conf


@pytest.fixture
def shutdown() -> RecordingEvent:
    return RecordingEvent()


def client(conf, shutdown, *outcomes: Any) -> Ironic:
    return Ironic(conf, shutdown=shutdown, connection=FakeConnection(*outcomes))


# ---------------------------------------------------------------- retries


@pytest.mark.parametrize(
    "failure",
    [
        ironic_error(503, "No free conductor workers"),
        ironic_error(500, "Internal Server Error"),
        Unreachable("Connection refused"),
        Unreachable("Read timed out"),
        ks_exceptions.ConnectFailure("Connection refused"),
        ks_exceptions.ConnectTimeout("timed out"),
        ks_exceptions.DiscoveryFailure("Unable to find a version discovery document"),
    ],
    ids=["503", "500", "refused", "timeout", "auth-refused", "auth-timeout", "discovery"],
)
def test_retries_then_succeeds(conf, shutdown, failure):
    ironic = client(conf, shutdown, failure, failure, a_node())
    node = ironic.get_node(NODE)
    assert node.uuid == NODE
    assert node.provision_state == "manageable"
    assert shutdown.waits == [2.5, 2.5]
    assert ironic.calls == 3
    assert sent(ironic) == [("get", (f"/nodes/{NODE}",), SENT)] * 3


def test_node_locked_retries_start_short_and_double_up_to_the_interval(conf, shutdown):
    conf.set_override("max_retries", 8, group="ironic")
    locked = ironic_error(409, LOCKED)
    ironic = client(conf, shutdown, *[locked] * 7, a_node())
    assert ironic.get_node(NODE).uuid == NODE
    assert shutdown.waits == [0.1, 0.2, 0.4, 0.8, 1.6, 2.5, 2.5]
    assert ironic.calls == 8
    assert len(sent(ironic)) == 8


def test_another_failure_after_node_locked_waits_the_full_interval(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(409, LOCKED), ironic_error(503, "busy"), a_node())
    assert ironic.get_node(NODE).uuid == NODE
    assert shutdown.waits == [0.1, 2.5]


def test_exhausted_retries_are_service_unavailable(conf, shutdown):
    failures = [ironic_error(503, "No free conductor workers")] * 4
    ironic = client(conf, shutdown, *failures)
    with pytest.raises(ServiceUnavailable, match="Ironic") as caught:
        ironic.set_power_state(NODE, "power on")
    assert caught.value.retryable
    assert "4 attempts" in caught.value.message
    assert shutdown.waits == [2.5, 2.5, 2.5]
    assert ironic.calls == 4


def test_no_retries_when_max_retries_is_zero(conf, shutdown):
    conf.set_override("max_retries", 0, group="ironic")
    ironic = client(conf, shutdown, ks_exceptions.ConnectFailure("refused"))
    with pytest.raises(ServiceUnavailable):
        ironic.get_node(NODE)
    assert shutdown.waits == []
    assert ironic.calls == 1


def test_shutdown_stops_retrying_at_once(conf, shutdown):
    shutdown.set()
    ironic = client(conf, shutdown, ks_exceptions.ConnectFailure("refused"), a_node())
    with pytest.raises(ServiceUnavailable, match="shutdown"):
        ironic.get_node(NODE)
    assert ironic.calls == 1
    assert shutdown.waits == [2.5]


def test_shutdown_during_the_wait_stops_retrying(conf):
    class SetWhileWaiting(RecordingEvent):
        def wait(self, timeout=None):
            self.set()
            return super().wait(timeout)

    shutdown = SetWhileWaiting()
    ironic = client(conf, shutdown, ironic_error(503), ironic_error(503), a_node())
    with pytest.raises(ServiceUnavailable, match="shutdown"):
        ironic.get_node(NODE)
    assert ironic.calls == 1


# ---------------------------------------------------------------- mapping


def test_not_found(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(404, "Node nope could not be found."))
    with pytest.raises(NotFound, match=r"^Node nope was not found in Ironic$") as caught:
        ironic.get_node("nope")  # ironic-inspector's words (its common.ironic.NotFound)
    assert caught.value.http_status == 404
    assert isinstance(caught.value.__cause__, HttpError)
    assert caught.value.__cause__.status == 404
    assert shutdown.waits == []


def test_missing_port_is_not_found(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(404, "Port p could not be found."))
    with pytest.raises(NotFound, match="Port p could not be found"):
        ironic.delete_port("p")
    assert sent(ironic) == [("delete", ("/ports/p",), SENT)]


def test_refused_request_carries_ironics_message(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(400, "Cannot patch /nonexist."))
    with pytest.raises(BadRequest, match="Cannot patch /nonexist") as caught:
        ironic.patch_node(NODE, [{"op": "add", "path": "/nonexist", "value": 1}])
    assert caught.value.http_status == 400
    assert not caught.value.retryable
    assert shutdown.waits == []


def test_other_conflicts_are_not_retried(conf, shutdown):
    taken = ironic_error(409, "A port with MAC address 52:54:00:00:00:01 already exists.")
    ironic = client(conf, shutdown, taken)
    with pytest.raises(Conflict, match="already exists"):
        ironic.create_port(NODE, "52:54:00:00:00:01")
    assert shutdown.waits == []
    assert ironic.calls == 1


def test_refused_credentials_are_ours(conf, shutdown):
    ironic = client(conf, shutdown, ks_exceptions.Unauthorized("The request requires auth"))
    with pytest.raises(InspectorError, match="credentials") as caught:
        ironic.get_node(NODE)
    assert type(caught.value) is InspectorError
    assert caught.value.http_status == 500


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_answered_by_ironic_are_ours(conf, shutdown, status):
    ironic = client(conf, shutdown, ironic_error(status, "Forbidden"))
    with pytest.raises(InspectorError, match="credentials") as caught:
        ironic.set_power_state(NODE, "power on")
    assert type(caught.value) is InspectorError
    assert shutdown.waits == []


def test_no_library_exception_leaves(conf, shutdown):
    ironic = client(conf, shutdown, ks_exceptions.ClientException("something odd"))
    with pytest.raises(InspectorError, match="something odd"):
        ironic.get_node(NODE)


def test_a_tls_failure_is_not_retried(conf, shutdown):
    refused = Unreachable("TLS failed: certificate verify failed", retriable=False)
    ironic = client(conf, shutdown, refused, a_node())
    with pytest.raises(InspectorError, match="certificate verify failed") as caught:
        ironic.get_node(NODE)
    assert type(caught.value) is InspectorError
    assert shutdown.waits == []


def test_an_error_that_is_not_ironics_format_is_quoted(conf, shutdown):
    conf.set_override("max_retries", 0, group="ironic")
    ironic = client(conf, shutdown, Reply(502, b"<html>Bad Gateway</html>"))
    with pytest.raises(ServiceUnavailable, match="HTTP 502: <html>Bad Gateway</html>"):
        ironic.get_node(NODE)


def test_an_answer_that_is_not_json_is_our_error(conf, shutdown):
    garbled = Reply(200, b"<html>proxy says hi</html>")
    ironic = client(conf, shutdown, garbled)
    with pytest.raises(InspectorError, match="no JSON") as caught:
        ironic.get_node(NODE)
    assert type(caught.value) is InspectorError
    assert shutdown.waits == []


# ---------------------------------------------------------------- calls and results


def test_get_node_by_uuid_or_quoted_name(conf, shutdown):
    ironic = client(conf, shutdown, a_node(), a_node(name="rack 1/node"))
    assert ironic.get_node(NODE).uuid == NODE
    assert ironic.get_node("rack 1/node").name == "rack 1/node"
    assert sent(ironic) == [
        ("get", (f"/nodes/{NODE}",), SENT),
        ("get", ("/nodes/rack%201%2Fnode",), SENT),
    ]


def test_patch_node_sends_the_patch_and_reset_interfaces_when_asked(conf, shutdown):
    patch = [{"op": "replace", "path": "/driver", "value": "ipmi"}]
    ironic = client(conf, shutdown, a_node(), a_node(driver="ipmi"))
    assert ironic.patch_node(NODE, patch).driver == "fake-hardware"
    assert ironic.patch_node(NODE, patch, reset_interfaces=True).driver == "ipmi"
    assert sent(ironic) == [
        ("patch", (f"/nodes/{NODE}",), {**SENT, "json": patch}),
        (
            "patch",
            (f"/nodes/{NODE}",),
            {**SENT, "json": patch, "params": {"reset_interfaces": "true"}},
        ),
    ]


def test_power_and_boot_device_are_one_put_each(conf, shutdown):
    ironic = client(conf, shutdown, response(202), response(204), response(204))
    assert ironic.set_power_state(NODE, "power off") is None
    ironic.set_boot_device(NODE)
    ironic.set_boot_device(NODE, "disk", persistent=True)
    assert sent(ironic) == [
        ("put", (f"/nodes/{NODE}/states/power",), {**SENT, "json": {"target": "power off"}}),
        (
            "put",
            (f"/nodes/{NODE}/management/boot_device",),
            {**SENT, "json": {"boot_device": "pxe", "persistent": False}},
        ),
        (
            "put",
            (f"/nodes/{NODE}/management/boot_device",),
            {**SENT, "json": {"boot_device": "disk", "persistent": True}},
        ),
    ]
    assert ironic.calls == 3


def test_traits(conf, shutdown):
    missing_trait = ironic_error(404, f"Node {NODE} doesn't have a trait 'CUSTOM_B'")
    ironic = client(conf, shutdown, response(204), response(204), missing_trait)
    ironic.add_trait(NODE, "CUSTOM_A")
    ironic.remove_trait(NODE, "CUSTOM_A")
    ironic.remove_trait(NODE, "CUSTOM_B")  # a node without the trait is fine
    assert sent(ironic) == [
        ("put", (f"/nodes/{NODE}/traits/CUSTOM_A",), SENT),
        ("delete", (f"/nodes/{NODE}/traits/CUSTOM_A",), SENT),
        ("delete", (f"/nodes/{NODE}/traits/CUSTOM_B",), SENT),
    ]
    assert shutdown.waits == []


def test_removing_a_trait_of_a_node_ironic_has_not_is_not_found(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(404, "Node nope could not be found."))
    with pytest.raises(NotFound, match="could not be found"):
        ironic.remove_trait("nope", "CUSTOM_A")


def test_trait_removal_retries_a_locked_node(conf, shutdown):
    ironic = client(conf, shutdown, ironic_error(409, LOCKED), response(204))
    ironic.remove_trait(NODE, "CUSTOM_A")
    assert shutdown.waits == [0.1]
    assert ironic.calls == 2


def test_create_node_posts_ironics_field_names(conf, shutdown):
    created = {"uuid": NODE, "name": "new", "driver": "ipmi", "provision_state": "enroll"}
    ironic = client(conf, shutdown, response(201, {**created, "driver_info": {"x": "y"}}))
    node = ironic.create_node(driver="ipmi", uuid=NODE, name="new", driver_info={"x": "y"})
    assert (node.uuid, node.provision_state, node.driver_info) == (NODE, "enroll", {"x": "y"})
    body = {"driver": "ipmi", "uuid": NODE, "name": "new", "driver_info": {"x": "y"}}
    assert sent(ironic) == [("post", ("/nodes",), {**SENT, "json": body})]


def test_results_are_our_values(conf, shutdown):
    port = {"uuid": "p1", "node_uuid": NODE, "address": "52:54:00:00:00:01", "extra": None}
    ironic = client(
        conf,
        shutdown,
        a_node(extra={"a": 1}),
        response(201, port),
        response(200, port),
        response(204),
        response(202),
        response(204),
    )
    node = ironic.patch_node(NODE, [{"op": "add", "path": "/extra/a", "value": 1}])
    assert node == IronicNode(
        uuid=NODE,
        name="node-1",
        provision_state="manageable",
        power_state="power off",
        driver="fake-hardware",
        driver_info={},
        properties={},
        extra={"a": 1},
        maintenance=False,
        inspect_interface=None,
    )
    assert ironic.create_port(NODE, "52:54:00:00:00:01", extra={"b": 2}) == IronicPort(
        uuid="p1",
        node_uuid=NODE,
        address="52:54:00:00:00:01",
        pxe_enabled=True,
        extra={},
        local_link_connection={},
        physical_network=None,
    )
    assert ironic.update_port("p1", []).uuid == "p1"
    ironic.set_boot_device(NODE)
    ironic.set_power_state(NODE, "rebooting")
    ironic.delete_port("p1")
    new_port = {"node_uuid": NODE, "address": "52:54:00:00:00:01", "pxe_enabled": True}
    assert sent(ironic) == [
        (
            "patch",
            (f"/nodes/{NODE}",),
            {**SENT, "json": [{"op": "add", "path": "/extra/a", "value": 1}]},
        ),
        ("post", ("/ports",), {**SENT, "json": {**new_port, "extra": {"b": 2}}}),
        ("patch", ("/ports/p1",), {**SENT, "json": []}),
        (
            "put",
            (f"/nodes/{NODE}/management/boot_device",),
            {**SENT, "json": {"boot_device": "pxe", "persistent": False}},
        ),
        ("put", (f"/nodes/{NODE}/states/power",), {**SENT, "json": {"target": "rebooting"}}),
        ("delete", ("/ports/p1",), SENT),
    ]
    assert ironic.calls == 6


def test_create_port_sends_only_the_fields_given(conf, shutdown):
    port = {"uuid": "p2", "node_uuid": NODE, "address": "52:54:00:00:00:02"}
    llc = {"switch_id": "52:54:00:aa:bb:cc", "port_id": "Eth1/1"}
    answer = {**port, "pxe_enabled": False, "local_link_connection": llc}
    ironic = client(conf, shutdown, response(201, {**answer, "physical_network": "phys"}))
    created = ironic.create_port(
        NODE, port["address"], pxe_enabled=False, local_link_connection=llc, physical_network="phys"
    )
    assert (created.pxe_enabled, created.local_link_connection) == (False, llc)
    body = {"node_uuid": NODE, "address": port["address"], "pxe_enabled": False, "extra": {}}
    body.update(local_link_connection=llc, physical_network="phys")
    assert sent(ironic) == [("post", ("/ports",), {**SENT, "json": body})]


def page(kind: str, uuids: list[str], more: bool) -> Reply:
    body: dict[str, Any] = {kind: [{"uuid": u, "driver": "fake-hardware"} for u in uuids]}
    if more:
        body["next"] = f"http://ironic/v1/{kind}?limit=2&marker={uuids[-1]}"
    return response(200, body)


def test_iter_nodes_pages_follow_next_and_retry_each_page(conf, shutdown):
    ironic = client(
        conf,
        shutdown,
        page("nodes", ["a", "b"], more=True),
        ks_exceptions.ConnectFailure("refused"),
        page("nodes", ["c", "d"], more=True),
        page("nodes", ["e"], more=False),
    )
    assert [n.uuid for n in ironic.iter_nodes(page_size=2)] == ["a", "b", "c", "d", "e"]
    gets = sent(ironic)
    assert [(name, args) for name, args, _ in gets] == [("get", ("/nodes/detail",))] * 4
    assert [kwargs["params"] for _, _, kwargs in gets] == [
        {"limit": 2},
        {"limit": 2, "marker": "b"},
        {"limit": 2, "marker": "b"},
        {"limit": 2, "marker": "d"},
    ]
    assert ironic.calls == 4


def test_iter_nodes_with_fields_asks_for_the_uuid_too(conf, shutdown):
    ironic = client(conf, shutdown, page("nodes", ["a"], more=False))
    assert [n.uuid for n in ironic.iter_nodes(fields=["name", "driver_info"])] == ["a"]
    _, args, kwargs = sent(ironic)[0]
    assert args == ("/nodes",)
    assert kwargs["params"] == {"fields": "uuid,name,driver_info", "limit": 1000}


def test_list_ports_is_one_request_for_a_short_list(conf, shutdown):
    body = {"ports": [{"uuid": "p1", "node_uuid": NODE, "address": "52:54:00:00:00:01"}]}
    ironic = client(conf, shutdown, response(200, body))
    assert [p.address for p in ironic.list_ports(NODE)] == ["52:54:00:00:00:01"]
    _, args, kwargs = sent(ironic)[0]
    assert args == ("/ports/detail",)
    assert kwargs["params"] == {"node_uuid": NODE, "limit": 1000}
    assert ironic.calls == 1


def test_listing_errors_are_mapped_from_ironics_answer(conf, shutdown):
    ironic = client(
        conf,
        shutdown,
        ironic_error(503, "No free conductor workers"),
        ironic_error(400, "Invalid limit"),
    )
    with pytest.raises(BadRequest, match="Invalid limit"):
        list(ironic.iter_ports(page_size=5))
    assert shutdown.waits == [2.5]


def stamped_ports(key: str, *stamps: str | None, more: bool = False) -> Reply:
    """Ironic's page of ports sorted by `key`, one per stamp (uuid p0, p1 ...)."""
    ports = [
        {"uuid": f"p{i}", "node_uuid": NODE, "address": f"52:54:00:00:00:0{i}", key: stamp}
        for i, stamp in enumerate(stamps)
    ]
    body: dict[str, Any] = {"ports": ports}
    if more:
        body["next"] = "http://ironic/v1/ports?marker=p1"
    return response(200, body)


def test_changed_ports_read_each_sorted_listing_until_an_older_port(conf, shutdown):
    since = "2026-01-01T10:00:00+00:00"
    ironic = client(
        conf,
        shutdown,
        stamped_ports(
            "created_at", "2026-01-01T10:00:05+00:00", "2026-01-01T10:00:00+00:00", more=True
        ),
        stamped_ports("created_at", "2026-01-01T09:59:59+00:00"),
        stamped_ports("updated_at", "2026-01-01T10:00:07+00:00", None),
    )
    found = ironic.changed_ports(model.timestamp(since), page_size=2)
    assert [(port.uuid, stamp.isoformat()) for port, stamp in found] == [
        ("p0", "2026-01-01T10:00:05"),
        ("p1", "2026-01-01T10:00:00"),
        ("p0", "2026-01-01T10:00:07"),
    ]
    params = [kwargs["params"] for _, _, kwargs in sent(ironic)]
    assert params == [
        {
            "fields": "uuid,node_uuid,address,created_at",
            "sort_key": "created_at",
            "sort_dir": "desc",
            "limit": 2,
        },
        {
            "fields": "uuid,node_uuid,address,created_at",
            "sort_key": "created_at",
            "sort_dir": "desc",
            "limit": 2,
            "marker": "p1",
        },
        {
            "fields": "uuid,node_uuid,address,updated_at",
            "sort_key": "updated_at",
            "sort_dir": "desc",
            "limit": 2,
        },
    ]


@pytest.mark.parametrize(
    ("ascending", "expected"),
    [
        (None, []),  # MySQL, SQLite: NULLs last in "desc", so no port was ever updated
        ("2026-01-01T10:00:07+00:00", None),  # PostgreSQL: NULLs first, updates after them
    ],
)
def test_changed_ports_tell_when_never_updated_ports_sort_first(
    conf, shutdown, ascending, expected
):
    ironic = client(
        conf,
        shutdown,
        stamped_ports("created_at", "2026-01-01T09:00:00+00:00"),
        stamped_ports("updated_at", None, None),
        stamped_ports("updated_at", ascending),
    )
    assert ironic.changed_ports(model.timestamp("2026-01-01T10:00:00")) == expected
    assert sent(ironic)[-1][2]["params"]["sort_dir"] == "asc"


def test_last_port_change_is_the_newest_of_either_stamp(conf, shutdown):
    ironic = client(
        conf,
        shutdown,
        stamped_ports("created_at", "2026-01-01T10:00:05+00:00"),
        stamped_ports("updated_at", "2026-01-01T10:00:07+00:00"),
    )
    assert ironic.last_port_change() == model.timestamp("2026-01-01T10:00:07")
    assert [kwargs["params"]["limit"] for _, _, kwargs in sent(ironic)] == [1, 1]
    empty = client(conf, shutdown, stamped_ports("created_at"), stamped_ports("updated_at"))
    assert empty.last_port_change() is None


def test_page_size_must_be_positive(conf, shutdown):
    with pytest.raises(ValueError, match="page_size"):
        list(client(conf, shutdown).iter_ports(page_size=0))


# ---------------------------------------------------------------- connection


def test_connection_needs_auth_or_an_endpoint(conf):
    with pytest.raises(ConfigError, match="auth_type"):
        connect(conf)


def test_connection_to_a_standalone_ironic(conf):
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", "http://127.0.0.1:1", group="ironic")
    connection = connect(conf)
    assert connection.session.timeout == 30.0  # no I/O yet: nothing listens there


# ---------------------------------------------------------------- bmc_addresses


def no_resolver(*args):
    raise AssertionError(f"no lookup expected: {args}")


@pytest.mark.parametrize(
    ("driver_info", "expected"),
    [
        ({"ipmi_address": "192.0.2.10", "ipmi_username": "admin"}, ["192.0.2.10"]),
        ({"ipmi_address": "[2001:db8::10]"}, ["2001:db8::10"]),
        ({"ipmi_address": "2001:db8::10"}, ["2001:db8::10"]),
        ({"redfish_address": "https://192.0.2.11:8000/redfish/v1"}, ["192.0.2.11"]),
        ({"redfish_address": "https://[2001:db8::11]:8443"}, ["2001:db8::11"]),
        ({"redfish_address": "192.0.2.12:8000"}, ["192.0.2.12"]),
        ({"drac_address": "192.0.2.13", "ilo_address": "192.0.2.14"}, ["192.0.2.13", "192.0.2.14"]),
        ({"irmc_address": "192.0.2.15", "ipmi_address": "192.0.2.15"}, ["192.0.2.15"]),
        ({"drac_host": "192.0.2.16"}, ["192.0.2.16"]),
        ({"ipmi_address": "127.0.0.1"}, []),
        ({"ipmi_address": "[::1]:623"}, []),
        ({"ipmi_address": ""}, []),
        ({"ipmi_address": None, "ipmi_port": 623}, []),
        ({"ipmi_address": "192.0.2.17", "ipmi_bridging": "single"}, []),
        ({"ipmi_address": "192.0.2.18", "ipmi_target_address": "0x20"}, ["192.0.2.18"]),
        ({}, []),
    ],
)
def test_bmc_addresses(driver_info, expected):
    assert bmc_addresses(driver_info, resolve=no_resolver) == expected


def test_bmc_host_names_are_resolved():
    answers = {
        "bmc-1.example.com": [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("192.0.2.20", 0)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2001:db8::20", 0, 0, 0)),
        ],
    }

    def resolve(host, *args):
        try:
            return answers[host]
        except KeyError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None

    info = {"ipmi_address": "bmc-1.example.com", "redfish_address": "https://gone.example.com"}
    assert bmc_addresses(info, resolve=resolve) == ["192.0.2.20", "2001:db8::20"]
    assert bmc_addresses({"ilo_address": "gone.example.com"}, resolve=resolve) == []


# ---------------------------------------------------------------- concurrency cap


class GatedConnection:
    """Every request blocks until released; counts the requests in flight."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = self.most = self.seen = 0
        self.arrived = threading.Condition(self.lock)

    def send(self, *args: Any, **kwargs: Any) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.seen += 1
            self.most = max(self.most, self.in_flight)
            self.arrived.notify_all()
        try:
            assert self.release.wait(10), "never released"
            return a_node()
        finally:
            with self.lock:
                self.in_flight -= 1


def gated_client(conf, shutdown, limit: int) -> tuple[Ironic, GatedConnection]:
    conf.set_override("max_concurrent_calls", limit, group="ironic")
    gate = GatedConnection()
    return Ironic(conf, shutdown=shutdown, connection=gate), gate


def calling(ironic: Ironic, gate: GatedConnection, count: int, reached: int) -> list:
    """`count` threads each getting the node, once `reached` requests reached Ironic."""
    threads = [threading.Thread(target=ironic.get_node, args=(NODE,)) for _ in range(count)]
    for thread in threads:
        thread.start()
    with gate.arrived:
        assert gate.arrived.wait_for(lambda: gate.seen == reached, timeout=10)
    return threads


def released(gate: GatedConnection, threads: list) -> None:
    gate.release.set()
    for thread in threads:
        thread.join(10)


def test_calls_in_flight_never_exceed_the_cap(conf):
    ironic, gate = gated_client(conf, threading.Event(), 2)
    threads = calling(ironic, gate, 5, reached=2)
    with gate.arrived:
        # The other three wait for a slot: nothing more reaches Ironic.
        assert not gate.arrived.wait_for(lambda: gate.seen > 2, timeout=0.3)
    released(gate, threads)
    assert (gate.seen, gate.most) == (5, 2)


def test_shutdown_ends_the_wait_for_a_slot(conf):
    shutdown = threading.Event()
    ironic, gate = gated_client(conf, shutdown, 1)
    holder = calling(ironic, gate, 1, reached=1)
    shutdown.set()
    with pytest.raises(ServiceUnavailable, match="gave up waiting"):
        ironic.get_node(NODE)
    released(gate, holder)
    assert gate.seen == 1


def test_no_cap_by_default(conf):
    ironic, gate = gated_client(conf, threading.Event(), 0)
    released(gate, calling(ironic, gate, 4, reached=4))
    assert gate.most == 4
