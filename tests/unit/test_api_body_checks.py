"""The cheap checks of request bodies: the fast schema predicate agrees with jsonschema,
and the look at the raw text never lets a NUL or deep nesting through."""

import copy
import json
import random

import jsonschema
import pytest

from inspector.api import params, schemas
from inspector.errors import BadRequest
from tests import fixtures

FIXTURES = fixtures.ROOT / "ipa"
PAYLOADS = sorted(FIXTURES.glob("*.json"))

#: Values put where the schema expects something else (or the same thing).
ODD_VALUES = [None, True, 0, 1.5, "x", [], ["x"], [None], [{}], [[]], {}, {"mac_address": 1}]


def mutations(payload: dict, count: int, seed: int):
    """Copies of payload with one value replaced somewhere along the schema's paths."""
    rng = random.Random(seed)
    paths = [
        ("inventory",),
        ("inventory", "interfaces"),
        ("inventory", "bmc_address"),
        ("inventory", "bmc_v6address"),
        ("inventory", "disks"),
        ("inventory", "boot"),
        ("inventory", "boot", "pxe_interface"),
        ("inventory", "cpu"),
        ("inventory", "cpu", "flags"),
        ("inventory", "memory"),
        ("pci_devices",),
        ("lldp_raw",),
        ("macs",),
        ("root_disk",),
        ("data",),
        ("boot_interface",),
        ("error",),
        ("logs",),
        ("extra",),
    ]
    #: List items, and keys of theirs to replace.
    items = {
        ("inventory", "interfaces"): ["mac_address", "name", "vendor", "lldp", "client_id"],
        ("inventory", "disks"): ["name", "serial", "size", "by_path"],
        ("pci_devices",): ["vendor_id", "product_id", "class"],
    }
    for _ in range(count):
        body = copy.deepcopy(payload)
        path = rng.choice([*paths, *[("item", *path) for path in items]])
        target = body
        if path[0] == "item":
            found = body
            for key in path[1:]:
                found = found.get(key) if isinstance(found, dict) else None
            target = rng.choice(found or [{}])
            key = rng.choice(items[path[1:]])
            if found and rng.random() < 0.2:  # the item itself
                found[rng.randrange(len(found))] = copy.deepcopy(rng.choice(ODD_VALUES))
                yield body
                continue
        else:
            for key in path[:-1]:
                target = target.setdefault(key, {})
            key = path[-1]
        if isinstance(target, dict):
            target[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        yield body


@pytest.mark.parametrize("path", PAYLOADS, ids=lambda p: p.name)
def test_fast_check_agrees_with_jsonschema(path):
    payload = json.loads(path.read_text())
    check = schemas.fast_check(schemas.CONTINUE)
    validator = jsonschema.Draft202012Validator(schemas.CONTINUE)
    verdicts = set()
    for body in [payload, *mutations(payload, 400, seed=len(path.name))]:
        verdict = validator.is_valid(body)
        assert check(body) is verdict, body
        verdicts.add(verdict)
    assert verdicts == {True, False}


def test_invalid_body_still_gets_jsonschemas_message():
    with pytest.raises(BadRequest, match=r"body\.inventory\.interfaces\[0\]\.mac_address"):
        schemas.validate(
            {"inventory": {"interfaces": [{"mac_address": 1}]}}, schemas.CONTINUE, "ramdisk data"
        )


@pytest.mark.parametrize(
    "schema",
    [
        schemas.REAPPLY,  # minProperties
        schemas.RULE,  # required, additionalProperties
        {"type": "integer"},
        {"type": ["number", "null"]},
        {"items": [{"type": "string"}]},
        {"properties": {"a": {"enum": [1]}}},
    ],
)
def test_no_fast_check_for_other_keywords_or_types(schema):
    assert schemas.fast_check(schema) is None


def test_fast_check_of_type_lists_and_untyped_schemas():
    check = schemas.fast_check({"type": ["string", "null"]})
    assert check("a") and check(None) and not check(1) and not check(False)
    untyped = schemas.fast_check({"properties": {"a": {"type": "boolean"}}})
    assert untyped(1) and untyped({"b": 1}) and untyped({"a": True}) and not untyped({"a": 0})


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "x\\u0000"}',
        b'{"a\\u0000": 1}',
        b'{"a": ["\\u0000"]}',
        b'{"a": ' + b"[" * 101 + b"]" * 101 + b"}",
        b'{"a": ' + b'{"b": ' * 100 + b"1" + b"}" * 100 + b"}",
    ],
)
def test_raw_look_never_skips_what_the_walk_refuses(raw):
    assert params._may_need_checking(raw)
    body = json.loads(raw)
    with pytest.raises(BadRequest):
        params._check_strings(body)


def test_ordinary_payload_skips_the_walk():
    raw = (FIXTURES / "ipa-thismachine.json").read_bytes()
    assert not params._may_need_checking(raw)
    # An escaped backslash before u0000 is no NUL: walked (text looks alike), accepted.
    assert params._may_need_checking(b'{"a": "\\\\u0000"}')
    params._check_strings(json.loads(b'{"a": "\\\\u0000"}'))
