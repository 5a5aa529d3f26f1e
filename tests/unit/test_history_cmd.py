"""`inspector history` and `inspector drift` on a SQLite store: the table, the JSON,
and an unknown id (exit status 1, the message on standard error)."""

import json

import pytest

from inspector import cmd
from inspector.store import Store, schema
from tests.unit.test_api_history import NODE, three


@pytest.fixture
def config_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    db = Store.from_url(url)
    try:
        ids = three(db)
    finally:
        db.close()
    path = tmp_path / "inspector.conf"
    path.write_text(f"[database]\nconnection = {url}\n")
    return str(path), ids


def test_history_lists_newest_first(config_file, capsys):
    path, ids = config_file
    assert cmd.main(["--config-file", path, "history", NODE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["ID", "STATE"]
    assert [line.split()[:2] for line in lines[1:]] == [
        [str(ids[2]), "error"],
        [str(ids[1]), "finished"],
        [str(ids[0]), "finished"],
    ]
    assert lines[1].endswith("boom")
    assert cmd.main(["--config-file", path, "history", NODE, "--json"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)] == ids[::-1]


def test_drift_as_a_table_and_as_json(config_file, capsys):
    path, ids = config_file
    assert cmd.main(["--config-file", path, "drift", NODE]) == 0
    out = capsys.readouterr().out
    assert f"Introspection {ids[0]} -> {ids[1]}:" in out
    assert 'changed  firmware.version: "1.2.3" -> "9.9"' in out
    assert "Summary: firmware 1" in out
    argv = ["--config-file", path, "drift", NODE, "--from", str(ids[1]), "--to", str(ids[2])]
    assert cmd.main([*argv, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["from"], document["to"]) == (ids[1], ids[2])
    assert document["changes"][0]["new"] == "1.2.3"


def test_an_unknown_id_or_a_reversed_range_is_an_error(config_file, capsys):
    path, ids = config_file
    assert cmd.main(["--config-file", path, "drift", NODE, "--to", "999999"]) == 1
    assert "Introspection 999999 of node" in capsys.readouterr().err
    argv = ["--config-file", path, "drift", NODE, "--from", str(ids[1]), "--to", str(ids[0])]
    assert cmd.main(argv) == 1
    assert "newer" in capsys.readouterr().err
