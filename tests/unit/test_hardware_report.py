"""GET /v1/report/hardware (1.19): every node's stored processed data grouped by a category,
from the real payloads of several kinds; the changed column from the data's drift; the
nodes of each group on request; bad input."""

import pytest

from inspector.processing import hardware_report
from tests import fixtures, seed

V19 = {"X-OpenStack-Ironic-Inspector-API-Version": "1.19"}

#: Payload kinds, and how many nodes of each the fleet has.
FLEET = {
    fixtures.LARGE_SERVER: 3,
    fixtures.IPA: 2,
    fixtures.FOUR_NIC: 1,
    fixtures.APIREF: 1,
}
DRIFT = {
    "base": "r-1",
    "changes": [{"path": "firmware.version", "kind": "changed", "old": "1.2.2", "new": "1.2.3"}],
    "summary": {"firmware": 1},
}


@pytest.fixture
def fleet(store):
    """node uuid -> the payload it was introspected with; the first large server drifted,
    the second has a drift without changes."""
    nodes = {}
    for path, count in FLEET.items():
        for index in range(count):
            uuid = f"{len(nodes):08d}-0000-4000-8000-000000000000"
            data = fixtures.load(path)
            if path == fixtures.LARGE_SERVER and index < 2:
                data["drift"] = (
                    DRIFT if index == 0 else {"base": None, "changes": [], "summary": {}}
                )
            seed.node(store, uuid, "finished")
            store.store_data(uuid, data, processed=True)
            store.save_snapshot(uuid, {"uuid": uuid, "name": f"n{len(nodes)}"}, None)
            nodes[uuid] = path
    return nodes


def _report(client, **query):
    answer = client.get("/v1/report/hardware", query_string=query, headers=V19)
    assert answer.status_code == 200, answer.json
    return answer.json


def _groups(report) -> dict:
    return {g["label"]: (g["nodes"], g["items"], g["changed"]) for g in report["groups"]}


def test_system_and_firmware_as_the_payloads_say(client, fleet):
    report = _report(client)
    assert (report["by"], report["nodes"]) == ("system", 7)
    # Empty dmidecode fields, or no system_vendor at all: unknown.
    assert _groups(report) == {"unknown": (4, 4, 0), "Synthetic Inc. SYN-R650": (3, 3, 1)}
    assert report["groups"][1]["key"] == {"vendor": "Synthetic Inc.", "product": "SYN-R650"}
    assert _groups(_report(client, by="firmware")) == {
        "unknown": (4, 4, 0),
        "Synthetic 1.2.3": (3, 3, 1),
    }


def test_cpu_memory_disks_nics_pci(client, fleet):
    assert _groups(_report(client, by="cpu")) == {
        "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz x64": (3, 3, 1),
        "AMD EPYC x2": (2, 2, 0),
        "unknown model x2": (1, 1, 0),
        "unknown model x4": (1, 1, 0),
    }
    memory = _groups(_report(client, by="memory"))
    assert memory == {
        "524288 MiB": (3, 3, 1),
        "24576 MiB": (2, 2, 0),
        "12288 MiB": (1, 1, 0),
        "2048 MiB": (1, 1, 0),
    }
    disks = _groups(_report(client, by="disks"))
    assert disks["SSDSC2KB480G8 480.104 GB"][:2] == (3, 6)  # two per large server
    assert disks["Big Data Disk 1073.74 GB"] == (1, 1, 0)
    assert disks["unknown model 274.878 GB"] == (2, 2, 0)
    nics = _groups(_report(client, by="nics"))
    assert nics["0x8086 0x159b ice"] == (3, 12, 1)
    assert nics["0x1af4 0x0001 virtio_net"] == (2, 2, 0)
    assert nics["0x1af4 0x0001"] == (1, 2, 0)
    assert nics["unknown"] == (1, 4, 0)  # the 4-NIC inventory names no vendor
    pci = _groups(_report(client, by="pci"))
    assert pci["8086:2000"][:2] == (3, 3)
    assert pci["1af4:1045"] == (2, 2, 0)


def test_nodes_listed_on_request(client, fleet):
    report = _report(client, nodes="true")
    big = next(g for g in report["groups"] if g["label"] == "Synthetic Inc. SYN-R650")
    assert big["members"] == [
        {"uuid": uuid, "name": f"n{index}"}
        for index, (uuid, path) in enumerate(fleet.items())
        if path == fixtures.LARGE_SERVER
    ]
    assert "members" not in _report(client)["groups"][0]


def test_nic_firmware_where_the_payload_carries_it():
    data = fixtures.load(fixtures.IPA)
    data["extra"] = {"network": {"eth0": {"firmware-version": "1.0 0x8000"}}}
    report = hardware_report.build("nics", [("u", None, data)])
    assert report["groups"][0]["label"] == "0x1af4 0x0001 virtio_net firmware 1.0 0x8000"
    assert report["groups"][0]["key"]["firmware_version"] == "1.0 0x8000"


def test_empty_fleet(client):
    assert _report(client, by="pci") == {"by": "pci", "nodes": 0, "groups": []}


def test_bad_input(client, fleet):
    for query in ({"by": "gpu"}, {"nodes": "maybe"}, {"sort": "x"}):
        answer = client.get("/v1/report/hardware", query_string=query, headers=V19)
        assert answer.status_code == 400, query
    assert (
        "system, firmware"
        in client.get("/v1/report/hardware?by=gpu", headers=V19).json["error"]["message"]
    )
    answer = client.get("/v1/report/hardware")
    assert answer.status_code == 404 and "1.19" in answer.json["error"]["message"]
