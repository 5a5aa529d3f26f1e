"""The import from ironic-inspector on SQLite: the state mapping, which side is newer,
idempotency, dry runs, rules, and the errors for a source that is not one.

The source's tables are the ones ironic-inspector 12.5.0's own `ironic-inspector-dbsync
upgrade` creates on SQLite (copied from its output); tests/integration runs the real one.
"""

import datetime
import hashlib
import json
import pathlib
import sqlite3
import uuid

import pytest
from sqlalchemy import exc as sa_exc

from inspector import cmd
from inspector.machine import ABORT_REASON
from inspector.migration import importer, mapping
from inspector.migration.ironic_inspector_db import (
    FINAL_REVISION,
    Source,
    SourceNode,
    SourceUnusable,
)
from inspector.migration.mapping import Outcome, Status
from inspector.processing import lookup as processing_lookup
from inspector.store import Store, schema
from tests import seed

#: What `ironic-inspector-dbsync upgrade` (12.5.0) creates on SQLite.
UPSTREAM_SCHEMA = """
CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL,
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num));
CREATE TABLE options (uuid VARCHAR(36) NOT NULL, name VARCHAR(255) NOT NULL, value TEXT,
    PRIMARY KEY (uuid, name), FOREIGN KEY(uuid) REFERENCES nodes (uuid));
CREATE TABLE rules (uuid VARCHAR(36) NOT NULL, created_at DATETIME NOT NULL,
    description TEXT, disabled BOOLEAN, scope VARCHAR(255), PRIMARY KEY (uuid));
CREATE TABLE rule_conditions (id INTEGER NOT NULL, rule VARCHAR(36),
    op VARCHAR(255) NOT NULL, multiple VARCHAR(255) NOT NULL, field TEXT, params TEXT,
    invert BOOLEAN, PRIMARY KEY (id), FOREIGN KEY(rule) REFERENCES rules (uuid));
CREATE TABLE rule_actions (id INTEGER NOT NULL, rule VARCHAR(36),
    action VARCHAR(255) NOT NULL, params TEXT, PRIMARY KEY (id),
    FOREIGN KEY(rule) REFERENCES rules (uuid));
CREATE TABLE "nodes" (uuid VARCHAR(36) NOT NULL, error TEXT,
    version_id VARCHAR(36) DEFAULT (''), state VARCHAR(10) DEFAULT 'finished' NOT NULL,
    started_at DATETIME, finished_at DATETIME, manage_boot BOOLEAN, PRIMARY KEY (uuid));
CREATE TABLE "attributes" (name VARCHAR(255) NOT NULL, value VARCHAR(255),
    uuid VARCHAR(36), node_uuid VARCHAR(36), CONSTRAINT pk_attributes PRIMARY KEY (uuid),
    CONSTRAINT fk_node_attribute FOREIGN KEY(node_uuid) REFERENCES nodes (uuid));
CREATE TABLE introspection_data (uuid VARCHAR(36) NOT NULL, processed BOOLEAN NOT NULL,
    data TEXT, PRIMARY KEY (uuid, processed), FOREIGN KEY(uuid) REFERENCES nodes (uuid));
"""
#: Every state of ironic-inspector's introspection_state.States.all().
UPSTREAM_STATES = (
    "starting",
    "waiting",
    "processing",
    "finished",
    "error",
    "reapplying",
    "enrolling",
    "aborting",
)
T0 = datetime.datetime(2025, 3, 1, 12, 0, 0, 123456)


def at(minutes: int) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=minutes)


class Upstream:
    """An ironic-inspector database on SQLite, written as ironic-inspector writes it."""

    def __init__(self, path) -> None:
        self.url = f"sqlite:///{path}"
        self.db = sqlite3.connect(path)
        self.db.executescript(UPSTREAM_SCHEMA)
        self.db.execute("INSERT INTO alembic_version VALUES (?)", (FINAL_REVISION,))
        self.db.commit()

    def sql(self, statement: str, *args) -> None:
        self.db.execute(statement, args)
        self.db.commit()

    def node(self, state, started=0, finished=None, error=None, manage_boot=1) -> str:
        node_uuid = str(uuid.uuid4())
        ended = None if finished is None else str(at(finished))
        self.sql(
            "INSERT INTO nodes (uuid, state, started_at, finished_at, error, manage_boot, "
            "version_id) VALUES (?, ?, ?, ?, ?, ?, '')",
            node_uuid,
            state,
            str(at(started)),
            ended,
            error,
            manage_boot,
        )
        return node_uuid

    def attribute(self, node_uuid: str, name: str, value: str | None) -> None:
        self.sql(
            "INSERT INTO attributes (uuid, node_uuid, name, value) VALUES (?, ?, ?, ?)",
            str(uuid.uuid4()),
            node_uuid,
            name,
            value,
        )

    def data(self, node_uuid: str, document: dict, *, processed: bool) -> None:
        self.sql(
            "INSERT INTO introspection_data (uuid, processed, data) VALUES (?, ?, ?)",
            node_uuid,
            int(processed),
            json.dumps(document),
        )

    def rule(self, conditions, actions, *, created=0, description=None, scope=None, disabled=0):
        rule_uuid = str(uuid.uuid4())
        self.sql(
            "INSERT INTO rules (uuid, created_at, description, disabled, scope) "
            "VALUES (?, ?, ?, ?, ?)",
            rule_uuid,
            str(at(created)),
            description,
            disabled,
            scope,
        )
        for c in conditions:
            params = {k: v for k, v in c.items() if k not in ("op", "field", "multiple", "invert")}
            self.sql(
                "INSERT INTO rule_conditions (rule, op, multiple, invert, field, params) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                rule_uuid,
                c["op"],
                c.get("multiple", "any"),
                int(c.get("invert", False)),
                c["field"],
                json.dumps(params),
            )
        for a in actions:
            params = {k: v for k, v in a.items() if k != "action"}
            self.sql(
                "INSERT INTO rule_actions (rule, action, params) VALUES (?, ?, ?)",
                rule_uuid,
                a["action"],
                json.dumps(params),
            )
        return rule_uuid


@pytest.fixture
def upstream(tmp_path):
    source = Upstream(tmp_path / "ironic-inspector.sqlite")
    yield source
    source.db.close()


@pytest.fixture
def target(tmp_path):
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    store = Store.from_url(url)
    yield store
    store.close()


def validate(document):
    # The command's own validator: the API's JSON Schema, then the rule vocabulary.
    from inspector.cmd import db_cmd  # noqa: PLC0415 - the command wires it

    return db_cmd._validate_rule(document)


def run(upstream, target, dry_run=False) -> importer.Report:
    with Source(upstream.url) as source:
        return importer.run(source, target, validate_rule=validate, dry_run=dry_run)


def steps(report, kind=None) -> dict[str, Outcome]:
    return {s.ident: s.outcome for s in report.steps if kind is None or s.kind == kind}


# -- the mapping --------------------------------------------------------------------------


def test_every_upstream_state_has_a_mapping():
    mapped = mapping.SAME_STATES | mapping.INTERRUPTED_STATES | {mapping.ABORTING}
    assert mapped == set(UPSTREAM_STATES)


@pytest.mark.parametrize("state", ["waiting", "finished", "error"])
def test_shared_states_are_kept(state):
    node = SourceNode("u", state, at(0), at(5), "boom" if state == "error" else None, False)
    status, note = mapping.map_status(node)
    assert status == Status(state, at(0), at(5), node.error, False)
    assert note == ""


@pytest.mark.parametrize("state", sorted(mapping.INTERRUPTED_STATES))
def test_work_lost_with_the_process_becomes_an_error(state):
    status, note = mapping.map_status(SourceNode("u", state, at(0), None, None, None))
    assert status.state == "error"
    assert status.error == mapping.INTERRUPTED_REASON.format(state=state)
    # No end was recorded: the start stands in, the same on every run.
    assert status.finished_at == at(0)
    assert status.manage_boot is True  # NULL upstream means its default, True
    assert state in note


def test_an_unfinished_abort_is_a_cancellation():
    status, note = mapping.map_status(SourceNode("u", "aborting", at(0), None, None, True))
    assert (status.state, status.error) == ("error", ABORT_REASON)
    assert "power" in note


def test_an_unknown_state_is_rejected():
    status, note = mapping.map_status(SourceNode("u", "dreaming", at(0), None, None, True))
    assert status is None
    assert "dreaming" in note


def test_which_side_is_newer():
    waiting = Status("waiting", at(0), None, None, True)
    finished = Status("finished", at(0), at(3), None, True)
    restarted = Status("starting", at(10), None, None, True)
    assert mapping.decide(waiting, None) == Outcome.CREATE
    assert mapping.decide(waiting, waiting) == Outcome.UNCHANGED
    assert mapping.decide(finished, waiting) == Outcome.UPDATE  # same start, it ended
    assert mapping.decide(restarted, finished) == Outcome.UPDATE
    assert mapping.decide(waiting, finished) == Outcome.KEEP  # ours went further
    assert mapping.decide(finished, restarted) == Outcome.KEEP


def test_attribute_names_are_our_lookup_names():
    # ironic-inspector's node_cache.MACS_ATTRIBUTE and start_introspection's bmc_address.
    assert (processing_lookup.MAC, processing_lookup.BMC) == ("mac", "bmc_address")
    wanted = mapping.wanted_attributes({"mac": {"AA:BB:CC:DD:EE:FF"}, "bmc_address": set()})
    assert wanted == {"mac": ["aa:bb:cc:dd:ee:ff"]}


# -- nodes, attributes and data -----------------------------------------------------------


def test_nodes_are_imported_once(upstream, target):
    finished = upstream.node("finished", 0, 4)
    upstream.data(finished, {"inventory": {"x": 1}}, processed=True)
    upstream.data(finished, {"inventory": {"x": 1}, "raw": True}, processed=False)
    waiting = upstream.node("waiting", 2, manage_boot=0)
    upstream.attribute(waiting, "mac", "AA:BB:CC:DD:EE:01")
    upstream.attribute(waiting, "mac", "aa:bb:cc:dd:ee:02")
    upstream.attribute(waiting, "bmc_address", "192.0.2.9")
    upstream.attribute(waiting, "bmc_address", None)
    processing = upstream.node("processing", 3)
    bogus = upstream.node("dreaming", 3)

    report = run(upstream, target)

    assert steps(report, "node") == {
        finished: Outcome.CREATE,
        waiting: Outcome.CREATE,
        processing: Outcome.CREATE,
        bogus: Outcome.REJECT,
    }
    node = target.get_node(finished)
    assert (node.state, node.started_at, node.finished_at, node.version) == (
        "finished",
        at(0),
        at(4),
        1,
    )
    assert target.get_data(finished, processed=True) == {"inventory": {"x": 1}}
    assert target.get_data(finished, processed=False) == {"inventory": {"x": 1}, "raw": True}
    node = target.get_node(waiting)
    assert (node.state, node.manage_boot) == ("waiting", False)
    assert target.attributes(waiting) == {
        "bmc_address": ["192.0.2.9"],
        "mac": ["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:02"],
    }
    assert target.lookup_nodes({"mac": ["AA:BB:CC:DD:EE:02"]}) == {waiting: (1, node)}
    assert target.get_node(processing).state == "error"

    again = run(upstream, target)
    assert again.writes == 0
    assert set(steps(again, "node").values()) == {Outcome.UNCHANGED, Outcome.REJECT}
    assert target.get_node(finished).version == 1


def test_a_dry_run_writes_nothing(upstream, target):
    node = upstream.node("finished", 0, 1)
    upstream.data(node, {"a": 1}, processed=True)
    upstream.rule([], [{"action": "add-trait", "name": "CUSTOM_A"}])

    report = run(upstream, target, dry_run=True)

    assert report.writes == 3
    assert target.list_nodes(limit=10) == []
    assert target.rule_summaries() == []
    assert "would create" in report.summary()
    assert report.summary().endswith("dry run: nothing was written")
    assert run(upstream, target).writes == 3


def test_a_newer_source_updates_and_mirrors(upstream, target):
    node = upstream.node("waiting", 0)
    upstream.attribute(node, "mac", "aa:bb:cc:dd:ee:01")
    upstream.data(node, {"old": True}, processed=False)
    run(upstream, target)

    # ironic-inspector went on: a new introspection started (its data and attributes
    # were dropped), then finished.
    upstream.sql("DELETE FROM attributes")
    upstream.sql("DELETE FROM introspection_data")
    upstream.sql("UPDATE nodes SET state='finished', started_at=?, finished_at=?", at(9), at(12))
    report = run(upstream, target)

    assert {(s.kind, s.outcome) for s in report.steps} == {
        ("node", Outcome.UPDATE),
        ("attributes", Outcome.DELETE),
        ("raw data", Outcome.DELETE),
    }
    record = target.get_node(node)
    assert (record.state, record.started_at, record.finished_at, record.version) == (
        "finished",
        at(9),
        at(12),
        2,
    )
    assert target.attributes(node) == {}
    assert target.get_data(node, processed=False) is None


def test_our_newer_record_is_left_alone(upstream, target):
    node = upstream.node("finished", 0, 4)
    upstream.data(node, {"theirs": True}, processed=True)
    run(upstream, target)
    seed.move(target, node, "starting", started_at=at(30), finished_at=None)
    target.store_data(node, {"ours": True}, processed=True)
    upstream.data(node, {"theirs": "raw"}, processed=False)

    report = run(upstream, target)

    assert [(s.kind, s.outcome) for s in report.steps] == [("node", Outcome.KEEP)]
    assert "Inspector's record (starting" in report.steps[0].detail
    assert target.get_node(node).state == "starting"
    assert target.get_data(node, processed=True) == {"ours": True}
    assert target.get_data(node, processed=False) is None


def test_a_node_that_moves_during_the_import_is_left_alone(upstream, target, monkeypatch):
    node = upstream.node("finished", 0, 4)
    run(upstream, target)
    upstream.sql("UPDATE nodes SET started_at=?, finished_at=?", at(5), at(6))
    read = importer._read_ours

    def read_then_move(session, node_uuid):
        ours = read(session, node_uuid)
        seed.move(target, node_uuid, "starting", started_at=at(7))
        return ours

    monkeypatch.setattr(importer, "_read_ours", read_then_move)
    report = run(upstream, target)

    assert [(s.outcome, s.detail) for s in report.steps] == [
        (Outcome.KEEP, "changed in Inspector during the import")
    ]
    assert target.get_node(node).started_at == at(7)


# -- rules --------------------------------------------------------------------------------


def test_rules_keep_their_order_and_content(upstream, target):
    second = upstream.rule(
        [{"op": "eq", "field": "data://inventory.cpu.count", "value": 4, "multiple": "all"}],
        [
            {"action": "set-capability", "name": "boot_mode", "value": "uefi"},
            {"action": "add-trait", "name": "CUSTOM_FOUR"},
        ],
        created=5,
        description="four CPUs",
        scope="rack-1",
    )
    first = upstream.rule(
        [
            {"op": "ge", "field": "memory_mb", "value": 1024},
            {"op": "in-net", "field": "data://ipmi_address", "value": "192.0.2.0/24", "invert": 1},
        ],
        [{"action": "extend-attribute", "path": "/extra/tags", "value": "x", "unique": True}],
        created=1,
    )
    null_param = upstream.rule([], [{"action": "add-trait", "name": "A", "note": None}])
    unknown_op = upstream.rule([{"op": "bigger", "field": "x", "value": 1}], [{"action": "fail"}])
    disabled = upstream.rule([], [{"action": "add-trait", "name": "B"}], disabled=1)
    attribute = upstream.rule(
        [], [{"action": "set-attribute", "path": "/extra/c", "value": "{data.__class__}"}]
    )

    report = run(upstream, target)

    assert steps(report, "rule") == {
        first: Outcome.CREATE,
        second: Outcome.CREATE,
        null_param: Outcome.REJECT,
        unknown_op: Outcome.REJECT,
        disabled: Outcome.REJECT,
        attribute: Outcome.REJECT,
    }
    details = {s.ident: s.detail for s in report.steps}
    assert "actions[0] (set-attribute) value: {data.__class__}: only item" in details[attribute]
    assert "add-trait: unexpected parameter(s): note" in details[null_param]
    assert "unknown op 'bigger'" in details[unknown_op]
    assert [r["uuid"] for r in target.rule_summaries()] == [first, second]
    assert target.get_rule(second) == {
        "uuid": second,
        "description": "four CPUs",
        "scope": "rack-1",
        "conditions": [
            {"op": "eq", "field": "data://inventory.cpu.count", "value": 4, "multiple": "all"}
            | {"invert": False}
        ],
        "actions": [
            {"action": "set-capability", "name": "boot_mode", "value": "uefi"},
            {"action": "add-trait", "name": "CUSTOM_FOUR"},
        ],
    }
    assert target.get_rule(first)["conditions"][1]["invert"] is True

    again = run(upstream, target)
    assert steps(again, "rule")[first] == Outcome.UNCHANGED
    assert again.writes == 0


def test_a_different_rule_with_the_same_uuid_is_left_alone(upstream, target):
    rule = upstream.rule([], [{"action": "add-trait", "name": "THEIRS"}])
    target.create_rule(
        {"uuid": rule, "conditions": [], "actions": [{"action": "add-trait", "name": "OURS"}]}
    )

    report = run(upstream, target)

    assert steps(report, "rule") == {rule: Outcome.KEEP}
    assert target.get_rule(rule)["actions"] == [{"action": "add-trait", "name": "OURS"}]


# -- the source and the command -----------------------------------------------------------


def test_a_database_that_is_not_ironic_inspectors(tmp_path, target):
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with pytest.raises(SourceUnusable, match="is not an ironic-inspector database: no table"):
        Source(f"sqlite:///{empty}")
    with pytest.raises(SourceUnusable, match="is not one of ironic-inspector's"):
        Source(str(target.engine.url))
    with pytest.raises(SourceUnusable, match="cannot read the ironic-inspector database"):
        Source(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite'}")
    # Opened read-only: a missing file is not created (empty) on the way.
    with pytest.raises(SourceUnusable, match="cannot read the ironic-inspector database"):
        Source(f"sqlite:///{tmp_path / 'missing.sqlite'}")
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_short_password_is_not_masked_inside_the_drivers_words():
    with pytest.raises(SourceUnusable) as refused:
        Source("postgresql://u:p@127.0.0.1:1/x")
    assert "postgresql://u:***@127.0.0.1:1/x" in refused.value.message
    assert "port 1" in refused.value.message and "***ort" not in refused.value.message


def _fingerprint(directory: pathlib.Path) -> dict[str, str]:
    """Every file of the directory and the sha256 of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.iterdir())
    }


def test_the_source_is_never_written(upstream, target, tmp_path, capsys):
    """Not even a switch to WAL (a write of the file's header) by a dry run or an import."""
    node = upstream.node("finished", 0, 1)
    upstream.data(node, {"a": 1}, processed=True)
    upstream.attribute(node, "mac", "aa:bb:cc:dd:ee:01")
    upstream.rule([], [{"action": "add-trait", "name": "CUSTOM_A"}])
    upstream.db.close()
    source_dir = tmp_path / "source"
    source_dir.mkdir()
    path = source_dir / "ironic-inspector.sqlite"
    (tmp_path / "ironic-inspector.sqlite").rename(path)
    before = _fingerprint(source_dir)
    config = tmp_path / "inspector.conf"
    config.write_text(f"[database]\nconnection = {target.engine.url}\n")
    args = ["db", "import-ironic-inspector", "--config-file", str(config)]

    assert cmd.main([*args, "--source-connection", f"sqlite:///{path}", "--dry-run"]) == 0
    assert _fingerprint(source_dir) == before
    assert cmd.main([*args, "--source-connection", f"sqlite:///{path}"]) == 0
    assert "node: 1 created" in capsys.readouterr().out
    assert _fingerprint(source_dir) == before  # no -wal, -shm or -journal file either
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_the_source_connection_refuses_writes(upstream, tmp_path):
    before = _fingerprint(tmp_path)
    with Source(upstream.url) as source:
        for statement in ("DELETE FROM alembic_version", "PRAGMA journal_mode=WAL"):
            with source._reading() as connection:
                with pytest.raises(sa_exc.OperationalError, match="readonly database"):
                    connection.exec_driver_sql(statement)
    assert _fingerprint(tmp_path) == before


def test_a_source_path_that_needs_quoting_in_a_uri(tmp_path):
    directory = tmp_path / "a dir with 100%"
    directory.mkdir()
    upstream = Upstream(directory / "ironic inspector.sqlite")
    node = upstream.node("finished", 0, 1)
    upstream.db.close()
    with Source(upstream.url) as source:
        assert [n.uuid for n in source.nodes()] == [node]


def test_an_older_upstream_schema_asks_for_its_upgrade(upstream):
    upstream.sql("UPDATE alembic_version SET version_num = '2970d2d44edc'")
    with pytest.raises(SourceUnusable, match="run `ironic-inspector-dbsync upgrade`"):
        Source(upstream.url)


def test_the_command(upstream, target, tmp_path, capsys):
    node = upstream.node("aborting", 0)
    config = tmp_path / "inspector.conf"
    config.write_text(f"[database]\nconnection = {target.engine.url}\n")
    args = ["db", "import-ironic-inspector", "--config-file", str(config)]

    assert cmd.main([*args, "--source-connection", upstream.url, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"node {node}: would create: error" in out
    assert "check the node" in out
    assert target.list_nodes(limit=10) == []

    assert cmd.main([*args, "--source-connection", upstream.url]) == 0
    assert "node: 1 created" in capsys.readouterr().out
    assert target.get_node(node).error == ABORT_REASON

    assert cmd.main([*args, "--source-connection", str(target.engine.url)]) == 1
    assert "is not an ironic-inspector database" in capsys.readouterr().err


def test_the_command_needs_our_schema(upstream, tmp_path, capsys):
    config = tmp_path / "inspector.conf"
    config.write_text(f"[database]\nconnection = sqlite:///{tmp_path / 'new.sqlite'}\n")
    argv = ["db", "import-ironic-inspector", "--config-file", str(config)]
    assert cmd.main([*argv, "--source-connection", upstream.url]) == 1
    assert "inspector db upgrade" in capsys.readouterr().err
