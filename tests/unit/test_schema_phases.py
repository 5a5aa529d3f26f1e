"""Expand / contract phases of the migrations: what a rolling upgrade applies when, and
on which schema a process agrees to start."""

import pytest

from inspector.store import schema

CHAIN = [("a", "expand"), ("b", "expand"), ("c", "contract"), ("d", "expand")]


def test_every_shipped_revision_says_its_phase():
    revisions = schema.chain()
    assert revisions[-1][0] == schema.head_revision()
    assert {phase for _name, phase in revisions} <= {schema.EXPAND, schema.CONTRACT}


@pytest.mark.parametrize(
    ("current", "phase", "stop"),
    [
        (None, "expand", "b"),  # stops before the first pending contract
        ("a", "expand", "b"),
        ("b", "expand", "b"),  # nothing to expand: stays
        ("b", "contract", "head"),
        ("b", None, "head"),  # plain `db upgrade`: everything
        ("c", "expand", "d"),
    ],
)
def test_upgrade_targets(current, phase, stop):
    assert schema.target(current, phase, CHAIN) == stop


def test_compatibility_needs_every_expand_revision():
    assert schema.compatibility("d", CHAIN) == "ok"
    # c (contract) may wait, but d (expand, after it) is needed by this code.
    assert "lacks d" in schema.compatibility("b", CHAIN)


def test_pending_contract_revisions_do_not_stop_new_code():
    chain = [("a", "expand"), ("b", "expand"), ("c", "contract")]
    assert schema.compatibility("b", chain) == "ok"
    assert "lacks b" in schema.compatibility("a", chain)
    assert "inspector db upgrade --expand" in schema.compatibility(None, chain)


def test_a_schema_from_a_newer_release_is_recognised():
    assert schema.compatibility("zz-newer", CHAIN) == "newer"
    assert schema.pending("zz-newer", CHAIN) is None
