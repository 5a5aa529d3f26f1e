"""Introspection rules: paths, condition operators, scope, actions, formatting, evaluation."""

import copy
import json
import time

import pytest

from inspector import conf as config
from inspector.errors import BadRequest
from inspector.ironic import IronicNode
from inspector.processing import rule_actions, rule_conditions, rule_regex, rule_schema, rules
from inspector.processing.context import ProcessingContext, ProcessingError
from tests import fixtures
from tests.unit.test_rule_regex import CATASTROPHIC, interrupted_after

IPA = fixtures.IPA
FOUR_NIC = fixtures.FOUR_NIC

DATA = {
    "memory_mb": 16384,
    "cpus": "8",
    "inventory": {
        "bmc_address": "10.1.2.3",
        "cpu": {"count": 8, "architecture": "x86_64"},
        "interfaces": [
            {"name": "eth0", "mac_address": "aa:00:00:00:00:01", "ipv4_address": "192.0.2.5"},
            {"name": "eth1", "mac_address": "aa:00:00:00:00:02", "ipv4_address": None},
            {"name": "eth10", "mac_address": "aa:00:00:00:00:03", "ipv4_address": "10.0.0.7"},
        ],
        "disks": [{"name": "/dev/sda", "size": 500107862016}, {"name": "/dev/sdb", "size": 0}],
        "system_vendor": {"manufacturer": "Dell Inc.", "product_name": "PowerEdge R640"},
    },
    "extra": {"labels": [], "flags": {}, "note": ""},
}


def make_node(**overrides):
    fields = {
        "uuid": "1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        "name": "node-1",
        "provision_state": "inspecting",
        "power_state": "power on",
        "driver": "ipmi",
        "driver_info": {"ipmi_address": "10.1.2.3", "ipmi_username": "admin"},
        "properties": {"memory_mb": 8192, "cpus": 4, "capabilities": "boot_mode:uefi"},
        "extra": {"tags": ["rack1"], "owner": "ops"},
        "maintenance": False,
        "inspect_interface": "inspector",
    }
    fields.update(overrides)
    return IronicNode(**fields)


@pytest.fixture(scope="module")
def oslo_conf():
    return config.load([])


def make_context(conf, data=None, node=None):
    return ProcessingContext(
        node=node or make_node(),
        ports=[],
        data=copy.deepcopy(DATA if data is None else data),
        conf=conf,
    )


def rule(conditions=(), actions=None, uuid="r1", description=None, scope=None):
    return {
        "uuid": uuid,
        "description": description,
        "scope": scope,
        "conditions": list(conditions),
        "actions": actions or [{"action": "add-trait", "name": f"CUSTOM_{uuid.upper()}"}],
    }


def holds(conf, condition, data=None, node=None):
    """Whether one condition holds, through the public evaluate()."""
    context = make_context(conf, data, node)
    return rules.evaluate([rule([condition])], context) == ["r1"]


# --- paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("memory_mb", [16384]),
        ("$.memory_mb", [16384]),
        ("inventory.interfaces[*].name", ["eth0", "eth1", "eth10"]),
        ("inventory.interfaces[1].name", ["eth1"]),
        ("inventory.interfaces[7].name", []),
        ("inventory.disks[0].size", [500107862016]),
        ("inventory.system_vendor.*", ["Dell Inc.", "PowerEdge R640"]),
        ("inventory.cpu[*].count", [8]),
        ("inventory.'cpu'.count", [8]),
        ("inventory.missing.count", []),
        ("inventory.interfaces.name", []),
        ("$", [DATA]),
    ],
)
def test_paths_find_values(path, expected):
    assert rule_conditions.find(rule_conditions.parse_path(path), DATA) == expected


@pytest.mark.parametrize("path", ["", ".a", "a..b", "a b", "a[x]", "a.", "a[*"])
def test_invalid_paths_are_refused(path):
    with pytest.raises(ValueError):
        rule_conditions.parse_path(path)


def test_invalid_path_in_a_rule_fails_naming_rule_and_field(oslo_conf):
    context = make_context(oslo_conf)
    bad = rule([{"op": "eq", "field": "data://a..b", "value": 1}], description="broken")
    with pytest.raises(ProcessingError, match=r'rule "broken" \(r1\).*a\.\.b'):
        rules.evaluate([bad], context)


def test_unknown_scheme_fails(oslo_conf):
    context = make_context(oslo_conf)
    with pytest.raises(ProcessingError, match="unknown scheme"):
        rules.evaluate([rule([{"op": "eq", "field": "port://x", "value": 1}])], context)


# --- operators -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "field", "value", "expected"),
    [
        ("eq", "memory_mb", 16384, True),
        ("eq", "memory_mb", "16384", True),
        ("eq", "cpus", 8, True),
        ("eq", "memory_mb", 1024, False),
        ("eq", "inventory.cpu.architecture", "x86_64", True),
        ("eq", "inventory.cpu.architecture", "aarch64", False),
        ("ne", "memory_mb", 1024, True),
        ("ne", "memory_mb", 16384, False),
        ("lt", "memory_mb", 32768, True),
        ("lt", "memory_mb", 16384, False),
        ("gt", "memory_mb", 8192, True),
        ("gt", "memory_mb", 16384, False),
        ("le", "memory_mb", 16384, True),
        ("le", "memory_mb", 16383, False),
        ("ge", "memory_mb", 16384, True),
        ("ge", "memory_mb", 16385, False),
        # Numbers compare as numbers, not as strings ("9" > "10" as text).
        ("gt", "cpus", "10", False),
        ("lt", "cpus", 10, True),
        # Not both numbers: compared as strings, without an error.
        ("lt", "inventory.cpu.architecture", 5, False),
        ("gt", "inventory.cpu.architecture", "a", True),
        ("in-net", "inventory.bmc_address", "10.0.0.0/8", True),
        ("in-net", "inventory.bmc_address", "192.168.0.0/16", False),
        ("in-net", "inventory.bmc_address", "fd00::/8", False),
        ("in-net", "inventory.cpu.architecture", "10.0.0.0/8", False),
        ("matches", "inventory.cpu.architecture", "x86_.*", True),
        ("matches", "inventory.cpu.architecture", "x86", False),
        ("contains", "inventory.cpu.architecture", "86", True),
        ("contains", "inventory.cpu.architecture", "^86", False),
        ("is-empty", "extra.labels", None, True),
        ("is-empty", "extra.flags", None, True),
        ("is-empty", "extra.note", None, True),
        ("is-empty", "inventory.interfaces[1].ipv4_address", None, True),
        ("is-empty", "inventory.disks[1].size", None, False),
        ("is-empty", "inventory.cpu", None, False),
    ],
)
def test_operators(oslo_conf, op, field, value, expected):
    condition = {"op": op, "field": field, "value": value}
    assert holds(oslo_conf, condition) is expected
    assert holds(oslo_conf, {**condition, "invert": True}) is not expected


def test_in_net_ipv6_and_address_with_prefix(oslo_conf):
    data = {"a": "fd00::5", "b": "192.0.2.9/24"}
    assert holds(oslo_conf, {"op": "in-net", "field": "a", "value": "fd00::/64"}, data)
    assert holds(oslo_conf, {"op": "in-net", "field": "b", "value": "192.0.2.0/24"}, data)


def test_matches_is_a_full_match_even_with_alternation(oslo_conf):
    # ironic-inspector appended "$", so "eth0|eth1" also matched "eth0-anything".
    data = {"name": "eth0-anything"}
    assert not holds(oslo_conf, {"op": "matches", "field": "name", "value": "eth0|eth1"}, data)
    assert holds(oslo_conf, {"op": "contains", "field": "name", "value": "eth0|eth1"}, data)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "gt", "le", "ge", "matches", "contains"])
def test_none_never_matches(oslo_conf, op):
    condition = {"op": op, "field": "inventory.interfaces[1].ipv4_address", "value": "None"}
    assert not holds(oslo_conf, condition)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "in-net", "matches", "contains"])
def test_missing_field_is_false_even_inverted(oslo_conf, op):
    condition = {"op": op, "field": "inventory.nothing", "value": "10.0.0.0/8"}
    assert not holds(oslo_conf, condition)
    assert not holds(oslo_conf, {**condition, "invert": True})


def test_missing_field_is_empty(oslo_conf):
    assert holds(oslo_conf, {"op": "is-empty", "field": "inventory.nothing"})
    assert not holds(oslo_conf, {"op": "is-empty", "field": "inventory.nothing", "invert": True})


@pytest.mark.parametrize(
    ("multiple", "value", "invert", "expected"),
    [
        ("any", "eth1", False, True),
        ("any", "eth7", False, False),
        ("all", "eth1", False, False),
        ("all", "eth.*", False, True),
        ("first", "eth0", False, True),
        ("first", "eth1", False, False),
        # invert applies to each value, then multiple combines them (ironic-inspector's).
        ("any", "eth1", True, True),
        ("all", "eth1", True, False),
        ("all", "wlan.*", True, True),
        ("first", "eth0", True, False),
    ],
)
def test_multiple_over_interfaces(oslo_conf, multiple, value, invert, expected):
    condition = {
        "op": "matches",
        "field": "inventory.interfaces[*].name",
        "value": value,
        "multiple": multiple,
        "invert": invert,
    }
    assert holds(oslo_conf, condition) is expected


def test_multiple_defaults_to_any(oslo_conf):
    condition = {"op": "in-net", "field": "inventory.interfaces[*].ipv4_address"}
    assert holds(oslo_conf, {**condition, "value": "10.0.0.0/8"})
    assert not holds(oslo_conf, {**condition, "value": "10.0.0.0/8", "multiple": "all"})


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("node://properties.memory_mb", 8192, True),
        ("node://properties.memory_mb", 16384, False),
        ("node://driver_info.ipmi_address", "10.1.2.3", True),
        ("node://extra.owner", "ops", True),
        ("node://extra.tags[*]", "rack1", True),
        ("node://driver", "ipmi", True),
        ("node://$.name", "node-1", True),
        ("data://memory_mb", 16384, True),
        ("data://$.inventory.disks[0].size", 500107862016, True),
    ],
)
def test_data_and_node_fields(oslo_conf, field, value, expected):
    assert holds(oslo_conf, {"op": "eq", "field": field, "value": value}) is expected


def test_no_conditions_always_match(oslo_conf):
    assert rules.evaluate([rule()], make_context(oslo_conf)) == ["r1"]


def test_all_conditions_must_hold(oslo_conf):
    conditions = [
        {"op": "ge", "field": "memory_mb", "value": 1024},
        {"op": "eq", "field": "node://driver", "value": "redfish"},
    ]
    assert rules.evaluate([rule(conditions)], make_context(oslo_conf)) == []
    assert rules.evaluate([rule(conditions[:1])], make_context(oslo_conf)) == ["r1"]


# --- scope ---------------------------------------------------------------------------


def test_scope():
    scoped_node = make_node(properties={"inspection_scope": "gpu"})
    assert rules.applies(rule(scope="gpu"), scoped_node)
    assert not rules.applies(rule(scope="gpu"), make_node())
    assert not rules.applies(rule(scope="storage"), scoped_node)
    assert rules.applies(rule(), scoped_node)
    assert rules.applies(rule(), make_node())


def test_evaluate_skips_rules_out_of_scope(oslo_conf):
    context = make_context(oslo_conf)
    ran = rules.evaluate([rule(uuid="a", scope="gpu"), rule(uuid="b")], context)
    assert ran == ["b"]
    assert context.changes.traits_add == {"CUSTOM_B"}


# --- actions -------------------------------------------------------------------------


def run_actions(conf, actions, data=None, node=None):
    context = make_context(conf, data, node)
    assert rules.evaluate([rule(actions=actions)], context) == ["r1"]
    return context.changes


def test_set_attribute(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {"action": "set-attribute", "path": "/properties/cpus", "value": 8},
            {"action": "set-attribute", "path": "extra/foo", "value": {"a": [1]}},
            {"action": "set-attribute", "path": "/driver_info/x", "value": "y"},
        ],
    )
    assert changes.patch == [
        {"op": "add", "path": "/properties/cpus", "value": 8},
        {"op": "add", "path": "/extra/foo", "value": {"a": [1]}},
        {"op": "add", "path": "/driver_info/x", "value": "y"},
    ]
    assert not changes.properties and not changes.capabilities


def test_set_attribute_accepts_reset_interfaces(oslo_conf):
    action = {"action": "set-attribute", "path": "/driver", "value": "redfish"}
    changes = run_actions(oslo_conf, [{**action, "reset_interfaces": True}])
    assert changes.patch == [{"op": "add", "path": "/driver", "value": "redfish"}]
    assert changes.reset_interfaces


def test_driver_change_resets_interfaces_unless_told_not_to(oslo_conf):
    action = {"action": "set-attribute", "path": "/driver", "value": "redfish"}
    assert run_actions(oslo_conf, [action]).reset_interfaces
    assert not run_actions(oslo_conf, [{**action, "reset_interfaces": False}]).reset_interfaces
    other = {"action": "set-attribute", "path": "/extra/x", "value": 1}
    assert not run_actions(oslo_conf, [other]).reset_interfaces


def test_set_capability(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {"action": "set-capability", "name": "big", "value": "yes"},
            {"action": "set-capability", "name": "cores", "value": 8},
            {"action": "set-capability", "name": "boot_mode"},
        ],
    )
    # No value removes the capability, as in ironic-inspector.
    assert changes.capabilities == {"big": "yes", "cores": "8", "boot_mode": None}
    assert not changes.patch


def test_extend_attribute_from_node_value(oslo_conf):
    changes = run_actions(
        oslo_conf, [{"action": "extend-attribute", "path": "/extra/tags", "value": "gpu"}]
    )
    assert changes.patch == [{"op": "add", "path": "/extra/tags", "value": ["rack1", "gpu"]}]


def test_extend_attribute_missing_value_starts_a_list(oslo_conf):
    changes = run_actions(
        oslo_conf, [{"action": "extend-attribute", "path": "/extra/new", "value": 1}]
    )
    assert changes.patch == [{"op": "add", "path": "/extra/new", "value": [1]}]


def test_extend_attribute_builds_on_earlier_changes(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {"action": "extend-attribute", "path": "/extra/tags", "value": "a"},
            {"action": "extend-attribute", "path": "/extra/tags", "value": "a", "unique": True},
            {"action": "extend-attribute", "path": "/extra/tags", "value": "a"},
            {"action": "set-attribute", "path": "/extra/list", "value": ["x"]},
            {"action": "extend-attribute", "path": "/extra/list", "value": "y"},
            {"action": "extend-attribute", "path": "/extra/tags", "value": "rack1", "unique": True},
        ],
    )
    assert changes.patch == [
        {"op": "add", "path": "/extra/tags", "value": ["rack1", "a"]},
        {"op": "add", "path": "/extra/tags", "value": ["rack1", "a", "a"]},
        {"op": "add", "path": "/extra/list", "value": ["x"]},
        {"op": "add", "path": "/extra/list", "value": ["x", "y"]},
    ]


def test_extend_attribute_sees_properties_and_earlier_rules(oslo_conf):
    context = make_context(oslo_conf)
    context.changes.properties["disks"] = ["sda"]
    context.changes.patch.append({"op": "add", "path": "/extra/tags/-", "value": "hook"})
    extend = [
        {"action": "extend-attribute", "path": "/properties/disks", "value": "sdb"},
        {"action": "extend-attribute", "path": "/extra/tags", "value": "rule"},
    ]
    rules.evaluate([rule(actions=extend)], context)
    assert context.changes.patch[1:] == [
        {"op": "add", "path": "/properties/disks", "value": ["sda", "sdb"]},
        {"op": "add", "path": "/extra/tags", "value": ["rack1", "hook", "rule"]},
    ]


def test_extend_attribute_of_a_non_list_fails(oslo_conf):
    context = make_context(oslo_conf)
    extend = [{"action": "extend-attribute", "path": "/extra/owner", "value": "x"}]
    with pytest.raises(ProcessingError, match=r"r1 failed: cannot extend /extra/owner: .* str"):
        rules.evaluate([rule(actions=extend)], context)


def test_traits_the_later_action_wins(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {"action": "add-trait", "name": "CUSTOM_A"},
            {"action": "remove-trait", "name": "CUSTOM_B"},
            {"action": "add-trait", "name": "CUSTOM_C"},
            {"action": "remove-trait", "name": "CUSTOM_C"},
            {"action": "remove-trait", "name": "CUSTOM_D"},
            {"action": "add-trait", "name": "CUSTOM_D"},
        ],
    )
    assert changes.traits_add == {"CUSTOM_A", "CUSTOM_D"}
    assert changes.traits_remove == {"CUSTOM_B", "CUSTOM_C"}


def test_fail_names_the_rule_and_formats_the_message(oslo_conf):
    context = make_context(oslo_conf)
    failing = rule(
        actions=[{"action": "fail", "message": "BMC {data[inventory][bmc_address]} refused"}],
        description="refuse lab nodes",
    )
    with pytest.raises(ProcessingError) as info:
        rules.evaluate([failing], context)
    assert str(info.value) == (
        'Introspection rule "refuse lab nodes" (r1) failed: BMC 10.1.2.3 refused'
    )
    assert info.value.http_status == 400


def test_fail_stops_processing(oslo_conf):
    context = make_context(oslo_conf)
    rule_set = [
        rule(uuid="first"),
        rule(uuid="fails", actions=[{"action": "fail", "message": "no"}]),
        rule(uuid="after"),
    ]
    with pytest.raises(ProcessingError, match="fails failed: no"):
        rules.evaluate(rule_set, context)
    assert context.changes.traits_add == {"CUSTOM_FIRST"}


def test_order_of_evaluation(oslo_conf):
    context = make_context(oslo_conf)
    rule_set = [
        rule(uuid="a", actions=[{"action": "set-attribute", "path": "/extra/x", "value": 1}]),
        rule([{"op": "eq", "field": "memory_mb", "value": 1}], uuid="skipped"),
        rule(uuid="c", actions=[{"action": "set-attribute", "path": "/extra/x", "value": 3}]),
    ]
    assert rules.evaluate(rule_set, context) == ["a", "c"]
    assert [op["value"] for op in context.changes.patch] == [1, 3]


def test_conditions_see_the_node_before_actions(oslo_conf):
    context = make_context(oslo_conf)
    rule_set = [
        rule(uuid="a", actions=[{"action": "set-attribute", "path": "/driver", "value": "x"}]),
        rule([{"op": "eq", "field": "node://driver", "value": "ipmi"}], uuid="b"),
    ]
    assert rules.evaluate(rule_set, context) == ["a", "b"]


# --- formatting ----------------------------------------------------------------------


def formatted(conf, value):
    changes = run_actions(conf, [{"action": "set-attribute", "path": "/extra/v", "value": value}])
    return changes.patch[0]["value"]


def test_formatting_data_and_node_references(oslo_conf):
    value = (
        "{data[inventory][bmc_address]}/{node[properties][cpus]}/{node[driver_info][ipmi_username]}"
    )
    assert formatted(oslo_conf, value) == "10.1.2.3/4/admin"
    assert formatted(oslo_conf, "{data[inventory][interfaces][2][name]}") == "eth10"
    assert formatted(oslo_conf, "{data[memory_mb]:>8}|{{literal}}") == "   16384|{literal}"


def test_formatting_is_recursive_in_lists_and_dicts(oslo_conf):
    value = {
        "bmc": "{data[inventory][bmc_address]}",
        "{data[inventory][cpu][architecture]}": ["{node[name]}", {"deep": ["{data[cpus]}"]}],
        "count": 3,
        "flag": True,
        "none": None,
    }
    assert formatted(oslo_conf, value) == {
        "bmc": "10.1.2.3",
        "x86_64": ["node-1", {"deep": ["8"]}],
        "count": 3,
        "flag": True,
        "none": None,
    }


def test_formatting_applies_to_capability_and_extend_values(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {
                "action": "set-capability",
                "name": "arch",
                "value": "{data[inventory][cpu][architecture]}",
            },
            {"action": "extend-attribute", "path": "/extra/tags", "value": "{node[extra][owner]}"},
        ],
    )
    assert changes.capabilities == {"arch": "x86_64"}
    assert changes.patch[0]["value"] == ["rack1", "ops"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{data.__class__}", r"\{data\.__class__\}: only item lookup"),
        ("{data[inventory].__class__}", r"\{data\[inventory\]\.__class__\}: only item lookup"),
        ("{data[inventory].keys}", "only item lookup"),
        ("{data[memory_mb][0]}", r"cannot look up '0' in a int"),
        ("{data[inventory][bmc_address][0]}", r"cannot look up '0' in a str"),
        ("{data[nothing]}", r"\{data\[nothing\]\}: no key 'nothing'"),
        ("{data[inventory][interfaces][9]}", "no index '9' in a list of 3"),
        ("{data[inventory][interfaces][name]}", "no index 'name'"),
        ("{config[x]}", "unknown name 'config'"),
        ("{}", "unknown name '0'"),
        ("{0}", "unknown name '0'"),
        ("{data[memory_mb]:>99999999}", "too wide"),
        ("{data[inventory]:d}", "cannot format"),
        ("{data[memory_mb]", "cannot format"),
    ],
)
def test_bad_references_are_refused(oslo_conf, value, message):
    context = make_context(oslo_conf)
    actions = [{"action": "set-attribute", "path": "/extra/v", "value": ["ok", {"k": value}]}]
    with pytest.raises(ProcessingError, match=message):
        rules.evaluate([rule(actions=actions)], context)
    assert not context.changes.patch


@pytest.mark.parametrize(
    "value",
    [
        "{data.__class__}",
        "{data[inventory].__class__}",
        "{config[x]}",
        "{}",
        "{0}",
        "{data[memory_mb]:{data}}",
        "{data[memory_mb]:>{data[cpus]}}",
        "{data[memory_mb]:>99999999}",
        "{data[memory_mb]!z}",
        "{data[memory_mb]",
        "} {data[memory_mb]}",
    ],
)
def test_what_creation_refuses_evaluation_refuses_too(oslo_conf, value):
    """rule_schema refuses these at creation (check_formats); a rule stored before (or
    imported) still fails when it runs, on any data."""
    with pytest.raises(ProcessingError):
        rule_actions.check_formats(["ok", {"k": value}])
    with pytest.raises(ProcessingError):
        formatted(oslo_conf, ["ok", {"k": value}])


@pytest.mark.parametrize(
    "value",
    [
        "{data[inventory][bmc_address]}/{node[properties][cpus]}",
        "{data[memory_mb]:>8}|{data[cpus]!r:.3}|{{literal}}",
        {"{data[inventory][cpu][architecture]}": ["{node[name]}"]},
    ],
)
def test_what_creation_accepts_formats(oslo_conf, value):
    rule_actions.check_formats(value)
    formatted(oslo_conf, value)


def test_path_and_names_are_not_formatted(oslo_conf):
    changes = run_actions(
        oslo_conf,
        [
            {"action": "set-attribute", "path": "/extra/{data[x]}", "value": 1},
            {"action": "add-trait", "name": "CUSTOM_{data[x]}"},
        ],
    )
    assert changes.patch[0]["path"] == "/extra/{data[x]}"
    assert changes.traits_add == {"CUSTOM_{data[x]}"}


# --- realistic rule sets against real ramdisk payloads ---------------------------------

RULE_SET = [
    rule(
        [{"op": "ge", "field": "inventory.memory.physical_mb", "value": 16384}],
        [{"action": "set-capability", "name": "big_memory", "value": "true"}],
        uuid="big-memory",
    ),
    rule(
        [{"op": "contains", "field": "inventory.system_vendor.manufacturer", "value": "(?i)dell"}],
        [{"action": "add-trait", "name": "CUSTOM_DELL"}],
        uuid="dell",
    ),
    rule(
        [{"op": "is-empty", "field": "inventory.disks"}],
        [{"action": "fail", "message": "no disks on {data[inventory][bmc_address]}"}],
        uuid="no-disks",
    ),
    rule(
        [
            {"op": "eq", "field": "inventory.cpu.architecture", "value": "x86_64"},
            {"op": "gt", "field": "inventory.disks[*].size", "value": 100 * 2**30},
        ],
        [
            {
                "action": "set-attribute",
                "path": "/properties/root_device",
                "value": {"name": "{data[root_disk][name]}"},
            },
            {
                "action": "extend-attribute",
                "path": "/extra/macs",
                "value": "{data[inventory][interfaces][0][mac_address]}",
            },
        ],
        uuid="root-device",
    ),
    rule(
        [
            {
                "op": "in-net",
                "field": "inventory.interfaces[*].ipv4_address",
                "value": "1.2.1.0/24",
                "multiple": "all",
            }
        ],
        [{"action": "add-trait", "name": "CUSTOM_PROVISIONING_NET"}],
        uuid="all-on-provisioning",
    ),
    rule(
        [{"op": "eq", "field": "node://driver", "value": "ipmi"}],
        [
            {
                "action": "set-attribute",
                "path": "/driver_info/ipmi_address",
                "value": "{data[inventory][bmc_address]}",
            }
        ],
        uuid="bmc-address",
        scope="lab",
    ),
]


def test_rule_set_on_ipa_payload(oslo_conf):
    data = json.loads(IPA.read_text())
    context = make_context(oslo_conf, data=data)
    ran = rules.evaluate(RULE_SET, context)
    # 24 GiB of RAM, no vendor, a 256 GiB disk, an address outside 1.2.1.0/24, no scope.
    assert ran == ["big-memory", "root-device"]
    assert context.changes.capabilities == {"big_memory": "true"}
    assert context.changes.traits_add == set()
    assert context.changes.patch == [
        {"op": "add", "path": "/properties/root_device", "value": {"name": "/dev/vda"}},
        {"op": "add", "path": "/extra/macs", "value": ["02:fc:00:00:00:01"]},
    ]


def test_rule_set_on_four_nic_payload(oslo_conf):
    data = json.loads(FOUR_NIC.read_text())
    node = make_node(properties={"inspection_scope": "lab"})
    context = make_context(oslo_conf, data=data, node=node)
    ran = rules.evaluate(RULE_SET, context)
    # 12 GiB, no vendor; eth2 has no ipv4_address key, so the path finds only the three
    # addresses there are, all in the network.
    assert ran == ["root-device", "all-on-provisioning", "bmc-address"]
    assert context.changes.traits_add == {"CUSTOM_PROVISIONING_NET"}
    assert context.changes.patch == [
        {"op": "add", "path": "/properties/root_device", "value": {"name": "/dev/sda"}},
        {"op": "add", "path": "/extra/macs", "value": ["11:22:33:44:55:66"]},
        {"op": "add", "path": "/driver_info/ipmi_address", "value": "1.2.3.4"},
    ]
    wired = {"op": "in-net", "field": "inventory.interfaces[*].ipv4_address", "value": "1.2.1.0/24"}
    assert holds(oslo_conf, {**wired, "multiple": "first"}, data=data)
    data["inventory"]["interfaces"][1]["ipv4_address"] = "192.0.2.1"
    assert holds(oslo_conf, wired, data=data)
    assert not holds(oslo_conf, {**wired, "multiple": "all"}, data=data)


def test_rule_set_fails_a_node_without_disks(oslo_conf):
    data = json.loads(FOUR_NIC.read_text())
    data["inventory"]["disks"] = []
    with pytest.raises(ProcessingError, match=r"rule no-disks failed: no disks on 1\.2\.3\.4"):
        rules.evaluate(RULE_SET, make_context(oslo_conf, data=data))


# --- regular expressions (RE2) -------------------------------------------------------


def test_catastrophic_pattern_evaluates_in_linear_time(oslo_conf):
    data = {"inventory": {"system_vendor": {"serial_number": CATASTROPHIC}}}
    started = time.monotonic()
    with interrupted_after(5):
        for op in ("matches", "contains"):
            condition = {"op": op, "field": "inventory.system_vendor.serial_number"}
            assert not holds(oslo_conf, {**condition, "value": "(a+)+$"}, data)
    assert time.monotonic() - started < 1.0


def test_numeric_comparison_of_a_long_run_of_digits_is_linear(oslo_conf):
    # The number test is a regular expression too (Python's, fixed, unambiguous).
    data = {"serial": "1" * 100_000 + "x"}
    with interrupted_after(5):
        assert not holds(oslo_conf, {"op": "eq", "field": "serial", "value": 5}, data)
        assert holds(oslo_conf, {"op": "gt", "field": "serial", "value": "1"}, data)


def test_stored_rule_with_a_pattern_re2_refuses_fails_naming_the_rule(oslo_conf):
    # Created before RE2 was the engine, or imported from ironic-inspector. Python's `re`
    # would take this lookahead (and the rule would match): it is never tried.
    stored = rule(
        [
            {"op": "eq", "field": "memory_mb", "value": 16384},
            {"op": "matches", "field": "inventory.cpu.architecture", "value": "(?=x86)x86_64"},
        ],
        description="legacy",
    )
    with pytest.raises(ProcessingError) as info:
        rules.evaluate([stored], make_context(oslo_conf))
    message = str(info.value)
    assert message.startswith('Introspection rule "legacy" (r1) failed: condition 1 ')
    assert "(matches on 'inventory.cpu.architecture')" in message
    assert "lookahead assertions are not supported" in message


def test_stored_pattern_fails_whatever_the_data(oslo_conf):
    # The first condition is false: the refused pattern still fails the introspection.
    stored = rule(
        [
            {"op": "eq", "field": "memory_mb", "value": 1},
            {"op": "contains", "field": "inventory.bmc_address", "value": r"(\d)\1"},
        ]
    )
    with pytest.raises(ProcessingError, match=r"condition 1 .*backreferences"):
        rules.evaluate([stored], make_context(oslo_conf))
    out_of_scope = {**stored, "scope": "elsewhere"}
    assert rules.evaluate([out_of_scope], make_context(oslo_conf)) == []


def test_a_text_too_long_for_its_pattern_fails_naming_rule_and_field(oslo_conf, monkeypatch):
    monkeypatch.setattr(rule_regex, "MAX_MATCH_COST", 1000)
    data = {"blob": "x" * 1000}
    too_long = rule([{"op": "contains", "field": "blob", "value": "y"}], description="blob")
    with pytest.raises(ProcessingError) as info:
        rules.evaluate([too_long], make_context(oslo_conf, data=data))
    assert str(info.value).startswith(
        "Introspection rule \"blob\" (r1) failed: condition 0 (contains on 'blob'): "
        "a text of 1000 bytes is too long for the pattern 'y'"
    )


# --- the time bound ------------------------------------------------------------------


class SteppingClock:
    """A fake clock: every reading is `step` seconds after the previous one."""

    def __init__(self, step):
        self.step = step
        self.now = 0.0
        self.readings = 0

    def __call__(self):
        self.readings += 1
        self.now += self.step
        return self.now


def bounded_conf(seconds):
    conf = config.load([])
    conf.set_override("rules_evaluation_timeout", seconds, group="processing")
    return conf


def test_default_bound():
    assert config.load([]).processing.rules_evaluation_timeout == 10.0


def test_timeout_between_rules_names_the_running_rule_and_the_bound():
    context = make_context(bounded_conf(2.5))
    rule_set = [rule(uuid="first"), rule(uuid="second"), rule(uuid="third", description="slow")]
    # One reading at the start, one after each action: the third action reads 3.0 s.
    with pytest.raises(rules.RulesTimeout) as info:
        rules.evaluate(rule_set, context, clock=SteppingClock(1.0))
    assert str(info.value) == (
        'Introspection rule "slow" (third) stopped: the rules ran past [processing] '
        "rules_evaluation_timeout (2.5 s); nothing was sent to Ironic"
    )
    assert isinstance(info.value, ProcessingError)  # the introspection ends in error
    assert context.changes.traits_add == {"CUSTOM_FIRST", "CUSTOM_SECOND", "CUSTOM_THIRD"}


def test_timeout_inside_a_condition_over_many_values(oslo_conf):
    data = {"values": list(range(100_000))}
    many = rule([{"op": "lt", "field": "values[*]", "value": -1, "multiple": "any"}])
    clock = SteppingClock(1.0)
    with pytest.raises(rules.RulesTimeout, match=r"rule r1 stopped.*\(10 s\)"):
        rules.evaluate([many], make_context(oslo_conf, data=data), clock=clock)
    assert clock.readings == 12  # the start, the path, then ten values: not 100,000


def test_timeout_is_not_wrapped_as_a_rule_failure(oslo_conf):
    # A broken later condition is never reached: the bound stops the first one.
    timed = rule(
        [
            {"op": "lt", "field": "values[*]", "value": -1, "multiple": "all", "invert": True},
            {"op": "eq", "field": "a..b", "value": 1},
        ]
    )
    data = {"values": list(range(100))}
    with pytest.raises(rules.RulesTimeout) as info:
        rules.evaluate([timed], make_context(oslo_conf, data=data), clock=SteppingClock(5.0))
    assert "failed" not in str(info.value)


def test_no_timeout_within_the_bound(oslo_conf):
    data = {"values": list(range(100_000))}
    many = rule([{"op": "lt", "field": "values[*]", "value": -1, "multiple": "any"}])
    frozen = SteppingClock(0.0)
    assert rules.evaluate([many], make_context(oslo_conf, data=data), clock=frozen) == []
    assert frozen.readings > 100_000


FIELDS = [
    "memory_mb",
    "$",
    "data://$",
    "node://driver",
    "data://inventory.interfaces[*].name",
    "data://",
    "node://",
    "data:// ",
    "data://.",
    "data://a..b",
    "node://a.",
    "data://a[x]",
    "",
    " ",
    ".a",
    "port://x",
    "://x",
    "data:/x",
]


@pytest.mark.parametrize("field", FIELDS)
def test_creation_refuses_exactly_the_fields_evaluation_refuses(oslo_conf, field):
    condition = {"op": "is-empty", "field": field}
    try:
        rule_schema.validate_rule(rule([condition], uuid="6f1b3c2e-8d4a-4e5f-9a7b-1c2d3e4f5a6b"))
    except BadRequest:
        created = False
    else:
        created = True
    try:
        rules.evaluate([rule([condition])], make_context(oslo_conf))
    except ProcessingError:
        evaluated = False
    else:
        evaluated = True
    assert created == evaluated
