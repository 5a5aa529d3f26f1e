"""`inspector status` (the PXE firewall of every worker: open or closed, the leader, the
lists' sizes, the last sync) and `inspector firewall close` (for a supervisor's
ExecStopPost: a killed worker cannot close a dnsmasq hostsdir itself)."""

import logging
import sys
import threading
import time
import uuid

from oslo_config import cfg

from inspector import conf as config
from inspector import store
from inspector.broker import channels
from inspector.errors import InspectorError
from inspector.firewall import drivers, manager
from inspector.firewall.status import Status, table

#: Seconds `inspector status` waits for the workers' answers unless told otherwise.
DEFAULT_WAIT = 2.0


def add_parsers(commands) -> None:
    status = commands.add_parser(
        "status", help="show every worker's PXE firewall: open or closed, leader, lists"
    )
    status.add_argument(
        "--wait",
        type=float,
        default=DEFAULT_WAIT,
        help=f"seconds to wait for the workers' answers (default {DEFAULT_WAIT:g})",
    )
    status.set_defaults(run=run_status)
    firewall = commands.add_parser("firewall", help="act on this host's PXE firewall")
    actions = firewall.add_subparsers(dest="action", required=True, metavar="ACTION")
    close = actions.add_parser(
        "close",
        help="close this host's PXE service now (e.g. ExecStopPost of the worker's unit)",
    )
    close.set_defaults(run=run_close)


def _load(argv) -> cfg.ConfigOpts:
    conf = config.load(argv)
    # oslo.messaging talks a lot at INFO; the command prints what matters.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return conf


def run_close(_args, argv) -> int:
    conf = _load(argv)
    driver = drivers.load(conf)
    driver.close()
    print(f"PXE service closed ({driver.name} driver)")
    return 0


def _leader(conf: cfg.ConfigOpts) -> str:
    try:
        db = store.Store.from_url(store.database_url(conf))
        try:
            mark = db.leadership(manager.KIND)
        finally:
            db.close()
    except InspectorError as exc:
        return f"unknown ({exc.message})"
    if mark is None:
        return "none elected yet"
    return f"{mark.holder} (term {mark.term}, elected {mark.at:%Y-%m-%d %H:%M:%S} UTC)"


def ask(channel: channels.Channel, wait: float) -> list[Status]:
    """Publish a status request and collect the answers for `wait` seconds."""
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


def run_status(args, argv) -> int:
    conf = _load(argv)
    print(f"Firewall leader: {_leader(conf)}")
    channel = channels.from_conf(conf, host=f"status-{uuid.uuid4().hex[:8]}", ironic=False)
    if channel is None or isinstance(channel, channels.LocalChannel):
        print(
            "No channel to ask the workers (an in-process or Redis queue without "
            "[firewall] channel_url): per-process status unavailable",
            file=sys.stderr,
        )
        return 1
    statuses = ask(channel, args.wait)
    if not statuses:
        print(f"No worker answered within {args.wait:g} s", file=sys.stderr)
        return 1
    sys.stdout.write(table(statuses, time.time()))
    return 0
