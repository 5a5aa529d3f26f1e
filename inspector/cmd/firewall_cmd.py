"""`inspector firewall close`: close this host's PXE service, for a supervisor
(systemd's ExecStopPost=) once the worker or PXE filter died: a killed process cannot
close a dnsmasq hostsdir itself, and another host may be answering already.

It must write the closed state within a fraction of a second: it imports oslo.config,
the option groups the drivers read and the drivers, nothing else (no oslo.log, no
backend's client library; tests/unit/test_startup.py says so).
"""

import argparse
import logging
import sys

from oslo_config import cfg

from inspector import conf as config
from inspector import redaction
from inspector.conf import dnsmasq_pxe_filter, iptables, pxe_filter
from inspector.firewall import drivers

#: The option groups the drivers' from_conf reads.
GROUPS = (pxe_filter, dnsmasq_pxe_filter, iptables)


def load(argv: list[str]) -> cfg.ConfigOpts:
    """The drivers' options, from the same files and arguments as every command's, and
    logging to standard error (warnings, everything with --debug): a command's lines
    never go to the service's log file (docs/configuration.md), masked as every line is."""
    conf = config.load_groups(argv, GROUPS)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if conf.debug else logging.WARNING)
    redaction.install(root)
    return conf


def run_close(_args: argparse.Namespace, argv: list[str]) -> int:
    conf = load(argv)
    driver = drivers.load(conf)
    driver.close()
    print(f"PXE service closed ({driver.name} driver)")
    return 0
