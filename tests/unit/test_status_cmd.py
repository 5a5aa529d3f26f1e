"""`inspector status` on each set-up that is valid by design: `inspector all`'s one
process (in-process queue and DLM), the noop PXE driver, a Redis queue whose workers hold
requests unacknowledged. A check that cannot apply says why, and exits 0; a figure that
cannot be known from another process is not made up."""

import argparse

import pytest

from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from inspector.cmd import status_cmd
from inspector.cmd.collectors import OK
from inspector.periodic.runner import KIND
from inspector.periodic.tasks import periods
from inspector.store import Store, database_url, schema
from tests.fakes.redis_server import fake_redis

pytestmark = pytest.mark.usefixtures("logging_state")


def status(tmp_path, capsys, text: str = "") -> tuple[int, dict[str, str]]:
    """`inspector status --wait 0` on a file of `text`: its exit status and its lines,
    by collector."""
    path = tmp_path / "inspector.conf"
    path.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n{text}")
    code = status_cmd.run_status(
        argparse.Namespace(json=False, wait=0.0), ["--config-file", str(path)]
    )
    lines = capsys.readouterr().out.splitlines()
    return code, {line.split()[0]: line for line in lines if line and not line.startswith(" ")}


def on_redis(url: str) -> str:
    """`inspector api` and `inspector worker` on one Redis: queue and DLM."""
    return f"[queue]\ntransport_url = {url}\n[coordination]\nbackend_url = {url}\n"


@pytest.fixture
def ran(conf, tmp_path):
    """The store of `inspector all` on tmp_path: its periodic tasks ran a moment ago."""
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    conf.set_override("connection", url, group="database")
    schema.upgrade(database_url(conf))
    db = Store.from_url(url)
    try:
        term = db.claim_leadership(KIND, "host-1")
        for task in periods(conf):
            db.finish_run(db.start_run(KIND, task, "host-1", term), "0 done")
    finally:
        db.close()


def test_inspector_all_on_its_defaults_exits_zero(tmp_path, capsys, ran):
    code, lines = status(tmp_path, capsys)
    assert code == OK, lines
    assert lines["queue"].split(None, 1)[1] == "ok: depth not measurable (in-process queue)"
    assert lines["singletons"].startswith("singletons     ok: one process (in-process DLM)")
    assert lines["firewall"].split(None, 1)[1] == "ok: not applicable: noop PXE driver"


def test_inspector_all_with_a_real_driver_has_one_pxe_service(tmp_path, capsys, ran):
    code, lines = status(tmp_path, capsys, "[pxe_filter]\ndriver = dnsmasq\n")
    assert code == OK, lines
    assert lines["firewall"].startswith("firewall       ok: not applicable: one process (in-")


def test_redis_queue_with_requests_in_flight_and_the_noop_driver(tmp_path, capsys, ran):
    with fake_redis() as url:
        queue = WorkQueue(url, "inspector", max_retries=1)
        try:
            for i in range(3):
                queue.put(Request(node_uuid=f"node-{i}", event="inspect"))
            assert queue.get(5) is not None  # a worker took it, then was killed
            _code, lines = status(tmp_path, capsys, on_redis(url))
        finally:
            queue.close()
    assert lines["queue"].split(None, 1)[1] == "ok (depth 2, 1 in flight)"
    assert lines["firewall"].split(None, 1)[1] == "ok: not applicable: noop PXE driver"


def test_a_real_driver_without_a_channel_is_unknown_and_says_how_to_know(tmp_path, capsys, ran):
    with fake_redis() as url:
        code, lines = status(tmp_path, capsys, on_redis(url) + "[pxe_filter]\ndriver = nftables\n")
    assert code & 2
    assert lines["firewall"].startswith("firewall       unknown: ")
    assert "[firewall] channel_url" in lines["firewall"]
