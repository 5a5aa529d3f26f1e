"""`inspector status`: the collectors' report (inspector.cmd.collectors) and the PXE
firewall of every worker (open or closed, the leader, the lists' sizes, the last sync)."""

import argparse
import dataclasses
import json
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING

from oslo_config import cfg

from inspector import conf as config
from inspector.api.logs import setup_logging
from inspector.cmd import collectors, status_read
from inspector.errors import InspectorError
from inspector.firewall.status import Status, table

if TYPE_CHECKING:
    from inspector.broker import channels

#: The firewall's singleton kind (inspector.firewall.manager.KIND, which a test compares):
#: the manager itself is not imported to read its leader.
FIREWALL = "firewall"


def _load(argv: list[str]) -> cfg.ConfigOpts:
    conf = config.load(argv)
    # Warnings and errors only (oslo.messaging talks a lot at INFO): the command prints
    # what matters.
    setup_logging(conf, command=True)
    return conf


def _leader(conf: cfg.ConfigOpts) -> str:
    try:
        db = status_read.Database(conf)
        try:
            mark = db.leader(FIREWALL)
        finally:
            db.close()
    except InspectorError as exc:
        return f"unknown ({exc.message})"
    if mark is None:
        return "none elected yet (only workers with a real PXE driver run for it)"
    holder, term, at = mark
    return f"{holder} (term {term}, elected {at:%Y-%m-%d %H:%M:%S} UTC)"


def ask(channel: "channels.Channel", wait: float) -> list[Status]:
    """Publish a status request and collect the answers for `wait` seconds."""
    from inspector.broker import channels  # noqa: PLC0415 - imported to ask only

    request_id = str(uuid.uuid4())
    answers: dict[str, Status] = {}
    guard = threading.Lock()

    def collect(event_type: str, payload: dict) -> None:
        if event_type == channels.STATUS and payload.get("request_id") == request_id:
            status = Status.from_dict(payload)
            with guard:
                answers[status.member] = status

    channel.subscribe(collect)
    channel.start()
    try:
        if not channel.ready(wait + 5):
            raise InspectorError(f"cannot listen on the channel {channel.description}")
        channel.publish(channels.STATUS_REQUEST, {"request_id": request_id})
        threading.Event().wait(wait)  # every answer that comes within `wait`
    finally:
        channel.stop()
    with guard:
        return list(answers.values())


def _firewall_statuses(conf: cfg.ConfigOpts, wait: float) -> list[Status] | None:
    # The channel (oslo.messaging for RabbitMQ) and the queue (kombu), as each is asked.
    from inspector.broker import channels  # noqa: PLC0415

    channel = channels.from_conf(conf, host=f"status-{uuid.uuid4().hex[:8]}", ironic=False)
    if channel is None or isinstance(channel, channels.LocalChannel):
        raise InspectorError(
            "no channel to ask the workers (an in-process or Redis queue without "
            "[firewall] channel_url: set it to check their PXE firewalls)"
        )
    statuses = ask(channel, wait)
    if not statuses:
        raise InspectorError(f"no worker answered within {wait:g} s")
    return statuses


def _queue_depth(conf: cfg.ConfigOpts) -> tuple[int | None, int | None]:
    """The work queue's (depth, requests in flight); see WorkQueue.in_flight."""
    from inspector.broker.queue import WorkQueue  # noqa: PLC0415 - see _firewall_statuses
    from inspector.broker.tls import Tls  # noqa: PLC0415

    queue = WorkQueue(
        conf.queue.transport_url,
        conf.queue.queue_name,
        max_retries=0,
        retry_interval=conf.queue.retry_interval,
        tls=Tls.from_conf(conf),
    )
    try:
        return queue.depth(), queue.in_flight()
    finally:
        queue.close()


def run_status(args: argparse.Namespace, argv: list[str]) -> int:
    conf = _load(argv)
    seen: list[Status] = []

    def firewall_statuses() -> list[dict]:
        seen.extend(_firewall_statuses(conf, args.wait) or [])
        return [dataclasses.asdict(status) for status in seen]

    db = status_read.Database(conf)
    try:
        reports = collectors.gather(
            conf,
            db,
            queue_depth=lambda: _queue_depth(conf),
            firewall_statuses=firewall_statuses,
        )
    finally:
        db.close()
    if args.json:
        print(json.dumps([report.to_dict() for report in reports], indent=2, default=str))
    else:
        print(f"Firewall leader: {_leader(conf)}")
        if seen:
            sys.stdout.write(table(seen, time.time()))
        sys.stdout.write(collectors.summary(reports))
    return collectors.exit_code(reports)
