"""ironic-pxe-filter with its database statements counted: run by Ironic's own
interpreter (it imports Ironic, not this project) as
`python counted_ironic_pxe_filter.py LEDGER --config-file ...`.

Every SQL statement it sends is counted (SQLAlchemy's `before_cursor_execute`); one
sync runs from the first statement after the previous sync to the end of its
`dnsmasq.sync` call, which appends a JSON line to LEDGER: its wall and thread CPU
seconds, its statements (and how many of each kind), and how many MACs it allowed and
denied. The filter itself runs unchanged (`ironic.command.pxe_filter.main`).
"""

import json
import re
import sys
import threading
import time

from sqlalchemy import event
from sqlalchemy.engine import Engine


def _kind(sql: str) -> str:
    """A statement's verb and the table it reads: `SELECT nodes`, `BEGIN`."""
    verb = sql.split(maxsplit=1)[0] if sql.strip() else ""
    table = re.search(r"\bFROM\s+(\w+)", sql)
    return f"{verb} {table.group(1)}" if table else verb


class Ledger:
    """The sync in progress, and the file each finished one is appended to."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.open: dict | None = None

    def statement(self, _conn: object, _cursor: object, sql: str, *_args: object) -> None:
        with self.lock:
            if self.open is None:
                self.open = {"wall0": time.time(), "cpu0": time.thread_time(), "statements": 0}
                self.open["sql"] = {}
            self.open["statements"] += 1
            kind = _kind(sql)
            self.open["sql"][kind] = self.open["sql"].get(kind, 0) + 1

    def synced(self, allow: object, deny: object) -> None:
        with self.lock:
            started, self.open = self.open or {}, None
        record = {
            "at": time.time(),
            "wall": time.time() - started.get("wall0", time.time()),
            "cpu": time.thread_time() - started.get("cpu0", time.thread_time()),
            "statements": started.get("statements", 0),
            "sql": started.get("sql", {}),
            "allowed": len(list(allow)),
            "denied": len(list(deny)),
        }
        with open(self.path, "a") as ledger:
            ledger.write(json.dumps(record) + "\n")


def main() -> None:
    ledger = Ledger(sys.argv.pop(1))
    event.listen(Engine, "before_cursor_execute", ledger.statement)

    # Imported here, after the listener: not the service, which main() asserts unloaded.
    from ironic.pxe_filter import dnsmasq  # noqa: PLC0415

    original = dnsmasq.sync

    def sync(allow_macs, deny_macs, allow_unknown):
        allow_macs, deny_macs = list(allow_macs), list(deny_macs)
        original(allow_macs, deny_macs, allow_unknown)
        ledger.synced(allow_macs, deny_macs)

    dnsmasq.sync = sync

    from ironic.command import pxe_filter  # noqa: PLC0415

    pxe_filter.main()


if __name__ == "__main__":
    main()
