"""Each command imports what it uses: the real command in a subprocess under Python's
`-X importtime`, whose report names every module imported. No timing: a command fails
here when someone makes it import a library it does not need (bench/startup.py times them).
"""

import pathlib
import subprocess
import sys

import pytest

from inspector.cmd import arguments, main
from inspector.conf import compat, keystoneauth
from inspector.firewall.drivers.dnsmasq import UNKNOWN_HOSTS
from inspector.store import schema

pytestmark = pytest.mark.usefixtures("logging_state")

ROOT = pathlib.Path(__file__).parents[2]
#: The service libraries: none is needed to parse a command line or close a firewall.
SERVICE_LIBRARIES = {
    "sqlalchemy",
    "alembic",
    "kombu",
    "oslo_messaging",
    "tooz",
    "eventlet",
    "flask",
    "keystoneauth1",
    "keystonemiddleware",
    "requests",
    "jsonschema",
}
#: The libraries a command that registers keystoneauth's options needs: none where they
#: are declared for the keystoneauth installed (inspector.conf.keystoneauth), else
#: keystoneauth itself registers them.
KEYSTONEAUTH = {"keystoneauth1", "requests"}
CONFIGURING = SERVICE_LIBRARIES - (set() if keystoneauth.declared() else KEYSTONEAUTH)


def configuring() -> set[str]:
    """CONFIGURING, but what oslo.log itself imports (the logging set-up every command
    has: eventlet under the oslo.log of OpenStack's 2025.2 and 2026.1 pins)."""
    return CONFIGURING - tops(imported_by("oslo_log.log"))


#: What `firewall close` must not import besides: oslo.log's set-up, oslo.utils' masking.
LOGGING = {"oslo_log.log", "oslo_utils.strutils"}
#: The package's modules `firewall close` may import, each with its submodules (the
#: package `inspector` itself is imported by any of them).
CLOSING = (
    "inspector.cmd.arguments",
    "inspector.cmd.firewall_cmd",
    "inspector.conf",
    "inspector.errors",
    "inspector.firewall.commands",
    "inspector.firewall.drivers",
    "inspector.firewall.ruleset",
    "inspector.macs",
    "inspector.redaction",
)
MAC = "52:54:00:12:34:56"


def imported(*argv: str, cwd: pathlib.Path = ROOT) -> tuple[set[str], subprocess.CompletedProcess]:
    """The modules `inspector ARGV` imports, and how it ended."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "inspector.cmd", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    modules = {
        line.rpartition("|")[2].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "inspector.cmd" in modules, result.stderr  # the report is there at all
    return modules, result


def tops(modules: set[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["--help"], ["status", "--help"], ["worker", "--help"], ["db", "--help"]],
    ids=" ".join,
)
def test_the_command_line_alone_imports_no_library(argv):
    modules, result = imported(*argv)
    assert result.returncode == 0, result.stderr
    ours = {name for name in modules if name.startswith("inspector")}
    assert ours == {"inspector", "inspector.cmd", "inspector.cmd.arguments", "inspector.errors"}
    assert not tops(modules) & ({"oslo_config"} | SERVICE_LIBRARIES)


def test_firewall_close_imports_only_oslo_config_and_the_drivers(tmp_path):
    hostsdir = tmp_path / "hostsdir"
    hostsdir.mkdir()
    (hostsdir / MAC).write_text(f"{MAC}\n")  # what a killed leader left open
    config = tmp_path / "inspector.conf"
    config.write_text(
        "[pxe_filter]\ndriver = dnsmasq\n[dnsmasq_pxe_filter]\n"
        f"dhcp_hostsdir = {hostsdir}\npurge_dhcp_hostsdir = false\n"
    )
    modules, result = imported("firewall", "close", "--config-file", str(config))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "PXE service closed (dnsmasq driver)\n"
    assert (hostsdir / MAC).read_text() == f"{MAC},ignore\n"
    assert (hostsdir / UNKNOWN_HOSTS).read_text() == "*:*:*:*:*:*,ignore\n"
    assert not tops(modules) & SERVICE_LIBRARIES
    assert not modules & LOGGING
    packages = {"inspector", "inspector.cmd", "inspector.firewall"}
    unexpected = {
        name
        for name in modules - packages
        if name.startswith("inspector.")
        and not any(name == mine or name.startswith(f"{mine}.") for mine in CLOSING)
    }
    assert not unexpected


def test_config_check_for_a_worker_imports_neither_the_store_nor_the_api(tmp_path):
    config = tmp_path / "inspector.conf"
    config.write_text(
        f"[DEFAULT]\nstate_path = {tmp_path}\n[queue]\ntransport_url = redis://127.0.0.1:1/0\n"
        "[coordination]\nbackend_url = redis://127.0.0.1:1\n"
    )
    modules, result = imported("config", "check", "--role", "worker", "--config-file", str(config))
    assert result.returncode == 0, result.stderr
    assert "configuration is valid for `inspector worker`" in result.stdout
    # It checks the queue's URL and the DLM's from tables (no kombu, no tooz: a driver is
    # imported only to connect) and registers keystoneauth's options from their
    # declaration: not the database, the API, Ironic's client or the channel.
    assert not tops(modules) & configuring()
    assert not {name for name in modules if name.startswith("inspector.coordination.drivers")}
    assert "inspector.api.logs" in modules  # the logging set-up it checks
    assert not {
        name
        for name in modules - {"inspector.api.logs"}
        if name.startswith(("inspector.store", "inspector.api.", "inspector.worker"))
    }


def test_config_check_of_every_role_imports_no_service_library(tmp_path):
    """The API's keystone check included: an auth_type it refuses needs no library."""
    config = tmp_path / "inspector.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    modules, result = imported("config", "check", "--config-file", str(config))
    assert result.returncode == 0, result.stderr
    assert "`inspector api` would refuse it:" in result.stdout
    assert "[keystone_authtoken] auth_type is not set" in result.stdout
    assert not tops(modules) & configuring()
    assert not {name for name in modules if name.startswith("inspector.store")}


# The oslo.log of OpenStack's 2025.2 and 2026.1 pins warns as it loads (the database's
# upgrade below runs in this process).
@pytest.mark.filterwarnings("ignore:eventletutils module is deprecated:DeprecationWarning")
def test_status_on_the_embedded_database_imports_no_service_library(tmp_path):
    """SQLite read with sqlite3; the in-process queue and DLM are not asked."""
    config = tmp_path / "inspector.conf"
    config.write_text(f"[DEFAULT]\nstate_path = {tmp_path}\n")
    assert main(["db", "upgrade", "--config-file", str(config)]) == 0
    modules, result = imported("status", "--wait", "0", "--config-file", str(config))
    assert result.returncode == 2, result.stderr  # the periodic tasks never ran
    assert "database       ok" in result.stdout
    assert not tops(modules) & configuring()
    assert not {name for name in modules if name.startswith("inspector.store")}


def imported_by(module: str) -> set[str]:
    """The modules importing `module` imports (nothing runs)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = {line.rpartition("|")[2].strip() for line in result.stderr.splitlines()}
    assert module in modules
    return modules


#: Flask and what comes with the API: the services that do not serve it do without.
API = {"flask", "werkzeug", "cheroot", "keystonemiddleware"}


def test_a_worker_does_not_import_the_api():
    assert not tops(imported_by("inspector.cmd.service_cmd")) & API


def test_a_pxe_filter_imports_neither_the_api_nor_the_store_nor_the_worker():
    """The store only with [pxe_filter] whitelist_source = inspector, when it opens it."""
    modules = imported_by("inspector.cmd.pxe_filter_cmd")
    assert not tops(modules) & (API | {"sqlalchemy", "alembic", "jsonschema"})
    ours = ("inspector.store", "inspector.worker", "inspector.processing", "inspector.api.")
    assert not {name for name in modules - {"inspector.api.logs"} if name.startswith(ours)}


def test_firewall_close_reads_the_files_and_arguments_as_every_command(tmp_path, capsys):
    hostsdir = tmp_path / "hostsdir"
    hostsdir.mkdir()
    directory = tmp_path / "inspector.conf.d"
    directory.mkdir()
    (directory / "10-filter.conf").write_text(f"[dnsmasq_pxe_filter]\ndhcp_hostsdir = {hostsdir}\n")
    first = tmp_path / "first.conf"
    # A group the command does not read may be invalid: closing must not depend on it.
    first.write_text("[pxe_filter]\ndriver = nftables\n[worker]\npool_size = none\n")
    last = tmp_path / "last.conf"
    last.write_text("[pxe_filter]\ndriver = dnsmasq\n")
    argv = ["--config-file", str(first), "firewall", "close", "--config-dir", str(directory)]
    assert main([*argv, "--config-file", str(last), "--debug"]) == 0
    assert capsys.readouterr().out == "PXE service closed (dnsmasq driver)\n"
    assert (hostsdir / UNKNOWN_HOSTS).read_text() == "*:*:*:*:*:*,ignore\n"


def test_firewall_close_refuses_an_invalid_value_of_its_options(tmp_path, capsys):
    config = tmp_path / "inspector.conf"
    config.write_text("[pxe_filter]\ndriver = dnsmasq\ncommand_timeout = 0\n")
    assert main(["firewall", "close", "--config-file", str(config)]) == 2
    err = capsys.readouterr().err
    assert "[pxe_filter] command_timeout" in err and str(config) in err


def test_the_command_line_names_what_the_code_takes():
    assert arguments.ROLES == compat.ROLES
    assert (arguments.EXPAND, arguments.CONTRACT) == (schema.EXPAND, schema.CONTRACT)
