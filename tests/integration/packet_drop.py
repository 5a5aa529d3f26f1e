"""Packets to and from one TCP port on the loopback dropped, as a network that loses them
would (connections hang instead of being refused): an nftables table of the test's own,
matching only a port the test owns (a proxy's), removed when the block ends (a helper,
not a test)."""

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

#: Priority of the table's input chain: before any other filter, so nothing accepts the
#: packets first.
PRIORITY = -300


def usable() -> str | None:
    """None when nftables can be used here, else why not."""
    if shutil.which("nft") is None:
        return "nft (nftables) is not installed: scripts/test installs it"
    if os.geteuid() != 0:
        return "dropping packets with nftables needs root"
    return None


@contextlib.contextmanager
def dropped(port: int) -> Iterator[str]:
    """Every TCP packet to or from 127.0.0.1:`port` dropped until the block ends; yields
    the table's name. Both directions cross the loopback's input hook."""
    table = f"inspector_test_drop_{port}_{os.getpid()}"
    rules = (
        f"add table inet {table}\n"
        f"add chain inet {table} input {{ type filter hook input priority {PRIORITY}; }}\n"
        f"add rule inet {table} input iif lo tcp dport {port} drop\n"
        f"add rule inet {table} input iif lo tcp sport {port} drop\n"
    )
    subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
    try:
        yield table
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], check=True)
