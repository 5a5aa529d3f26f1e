"""`inspector report`: the fleet report from the configured database, as a table, JSON, CSV
and a PNG bar chart."""

import csv
import io
import json

import pytest

from inspector import cmd
from inspector.cmd import report_cmd
from inspector.store import Store, schema
from tests import fixtures, seed
from tests.unit.test_hardware_report import DRIFT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def config(tmp_path):
    """A configuration on a SQLite database holding three introspected nodes."""
    url = f"sqlite:///{tmp_path / 'report.sqlite'}"
    schema.upgrade(url)
    db = Store.from_url(url)
    payloads = [fixtures.LARGE_SERVER, fixtures.LARGE_SERVER, fixtures.IPA]
    for index, path in enumerate(payloads):
        uuid = f"{index:08d}-0000-4000-8000-000000000000"
        data = fixtures.load(path)
        if index == 0:
            data["drift"] = DRIFT
        seed.node(db, uuid, "finished")
        db.store_data(uuid, data, processed=True)
        db.save_snapshot(uuid, {"uuid": uuid, "name": f"n{index}"}, None)
    db.close()
    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n[database]\nconnection = {url}\n")
    return str(path)


def _run(config, capsys, *args) -> str:
    assert cmd.main(["--config-file", config, "report", *args]) == 0
    return capsys.readouterr().out


def test_table(config, capsys):
    lines = _run(config, capsys, "--by", "cpu", "--nodes").splitlines()
    assert lines[0].split() == ["cpu", "nodes", "items", "changed"]
    assert lines[1].split()[-3:] == ["2", "2", "1"]
    assert lines[1].startswith("Intel(R) Xeon(R) Gold 6338")
    assert lines[2].split() == ["00000000-0000-4000-8000-000000000000", "n0"]
    assert lines[-1] == "3 nodes with processed data"


def test_json_and_csv(config, capsys):
    report = json.loads(_run(config, capsys, "--by", "disks", "--json"))
    assert report["by"] == "disks" and report["nodes"] == 3
    rows = list(csv.DictReader(io.StringIO(_run(config, capsys, "--by", "disks", "--csv"))))
    by_group = {row["group"]: row for row in rows}
    assert [row["group"] for row in rows] == [g["label"] for g in report["groups"]]
    ssd = by_group["SSDSC2KB480G8 480.104 GB"]
    assert (ssd["model"], ssd["size"], ssd["nodes"], ssd["items"], ssd["changed"]) == (
        "SSDSC2KB480G8",
        "480103981056",
        "2",
        "4",
        "1",
    )
    rows = list(csv.DictReader(io.StringIO(_run(config, capsys, "--csv", "--nodes"))))
    assert rows[0]["node_uuids"].split() == [
        "00000000-0000-4000-8000-000000000000",
        "00000001-0000-4000-8000-000000000000",
    ]


def test_plot(config, capsys, tmp_path):
    image = tmp_path / "fleet.png"
    _run(config, capsys, "--by", "pci", "--plot", str(image))
    assert image.read_bytes().startswith(PNG_MAGIC)
    assert image.stat().st_size > 10_000  # 40 PCI groups drawn: more than an empty figure


def test_plot_of_more_groups_than_bars(tmp_path):
    groups = [
        {"key": {}, "label": f"g{i}", "nodes": 1, "items": 1, "changed": 0} for i in range(40)
    ]
    image = tmp_path / "many.png"
    report_cmd.plot({"by": "pci", "nodes": 40, "groups": groups}, str(image))
    assert image.read_bytes().startswith(PNG_MAGIC)


def test_json_and_csv_are_exclusive(config, capsys):
    with pytest.raises(SystemExit):
        cmd.main(["--config-file", config, "report", "--json", "--csv"])
    assert "not allowed with argument" in capsys.readouterr().err
