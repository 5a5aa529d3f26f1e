"""Messages built from the ramdisk's data name the field or the format spec, never dump
the data: rule formatting errors, the hooks' warnings, the 400 of a refused body."""

import logging

import pytest

from inspector.api import schemas
from inspector.errors import BadRequest
from inspector.processing import rules
from inspector.processing.context import ProcessingError
from inspector.processing.hooks import lldp
from tests.unit.test_hooks import make_conf, make_node, payload, process
from tests.unit.test_rules import make_context, rule

SECRET = "hunter2-Zq9"
DATA = {
    "inventory": {"bmc_address": "10.0.0.9", "bmc_password": SECRET, "memory": {}},
    "memory_mb": 4096,
    "blob": "Q" * 5000,
}


@pytest.fixture
def conf():
    return make_conf()


def evaluate(conf, template):
    context = make_context(conf, data=DATA)
    actions = [{"action": "set-attribute", "path": "/extra/x", "value": template}]
    with pytest.raises(ProcessingError) as caught:
        rules.evaluate([rule(actions=actions)], context)
    return caught.value.message


@pytest.mark.parametrize(
    "template",
    [
        "{data[memory_mb]:{data}}",  # the data expanded into the spec
        "{data[memory_mb]:>{data[inventory][bmc_password]}}",
        "{data[memory_mb]:{data[blob]}}",
    ],
)
def test_a_format_spec_never_holds_the_data(conf, template):
    message = evaluate(conf, template)
    assert "a format spec cannot hold a replacement field" in message
    assert message.startswith("Introspection rule r1 failed: {data[memory_mb]}:")
    assert SECRET not in message and "QQQQ" not in message


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("{data[memory_mb]:>99999}", "format spec '>99999' is too wide"),
        ("{data[inventory][bmc_password]:%Y}", "'{data[inventory][bmc_password]:%Y}'"),
        ("{data[blob]:d}", "'{data[blob]:d}'"),
    ],
)
def test_format_errors_name_the_spec_as_the_rule_wrote_it(conf, template, named):
    message = evaluate(conf, template)
    assert named in message
    assert SECRET not in message and "QQQQ" not in message


def test_a_malformed_lldp_tlv_is_named_by_its_place(caplog):
    caplog.set_level(logging.WARNING)
    huge = "Z" * 10000
    assert lldp.parse([[1, "04aabbccddeeff"], [huge, "00"], ["2", f"zz{SECRET}"]]) is not None
    assert "LLDP TLV #1 is not a [type, hexadecimal value] pair (ValueError)" in caplog.text
    assert "LLDP TLV #2" in caplog.text
    assert "ZZZZ" not in caplog.text and SECRET not in caplog.text


def test_interface_records_are_named_not_dumped(conf, caplog):
    caplog.set_level(logging.INFO)
    conf.set_override("add_ports", "all", "processing")
    data = payload("apiref")
    data["inventory"]["interfaces"].append({"mac_address": "52:54:00:00:00:99", "x": SECRET})
    process(conf, data, "validate_interfaces")
    assert "Malformed interface record (inventory.interfaces[" in caplog.text
    assert SECRET not in caplog.text


def test_no_suitable_interface_names_the_interfaces_only(conf):
    data = payload("4nic")
    for iface in data["inventory"]["interfaces"]:
        iface.pop("ipv4_address", None)
        iface["client_id"] = SECRET
    with pytest.raises(ProcessingError) as caught:
        process(conf, data, "validate_interfaces")
    message = caught.value.message
    assert message.startswith("No suitable interfaces found among eth1, eth2, eth3, ib0 (")
    assert "add_ports = pxe" in message
    assert SECRET not in message and "mac_address" not in message


def test_a_tiny_root_disk_is_named_not_dumped(conf, caplog):
    caplog.set_level(logging.WARNING)
    data = payload("4nic")
    data["root_disk"] = {"name": "/dev/sda", "size": 5, "serial": SECRET}
    process(conf, data, "root_disk_selection", node=make_node())
    assert "the root disk /dev/sda is smaller than 1 GiB" in caplog.text
    assert SECRET not in caplog.text


@pytest.mark.parametrize(
    ("body", "expected", "absent"),
    [
        ({"actions": "A" * 5000}, "body.actions: a string of length 5000 is not of type", "AAAA"),
        ({"actions": [{"action": {"k": "B" * 100}}]}, "an object of length 1 is not", "BBBB"),
        ({"actions": None}, "body.actions: None is not of type 'array'", None),
        ({"actions": [{"action": "x"}], "colour": "blue"}, "'colour' was unexpected", None),
    ],
)
def test_a_refused_body_is_named_by_its_type_when_large(body, expected, absent):
    with pytest.raises(BadRequest) as caught:
        schemas.validate(body, schemas.RULE, "rule")
    message = caught.value.message
    assert expected in message
    assert absent is None or absent not in message
    assert len(message) < 700


def test_a_refused_value_under_a_credential_key_is_never_quoted():
    schema = {"type": "object", "properties": {"ipmi_password": {"type": "integer"}}}
    schemas._VALIDATORS[id(schema)] = (schemas.validators.validator_for(schema)(schema), None)
    try:
        with pytest.raises(BadRequest) as caught:
            schemas.validate({"ipmi_password": SECRET}, schema, "driver info")
    finally:
        del schemas._VALIDATORS[id(schema)]
    assert "body.ipmi_password: a string of length 11 is not of type 'integer'" in (
        caught.value.message
    )
