"""Configuration: ironic-inspector files load, ranges are enforced with clear messages."""

import logging
import os
import pathlib

import pytest

from inspector import conf as config
from inspector.cmd import config_cmd
from inspector.errors import ConfigError

ROOT = pathlib.Path(__file__).parents[2]
IRONIC_INSPECTOR_CONF = pathlib.Path(__file__).parent / "data" / "ironic-inspector.conf"


def write(tmp_path, text):
    path = tmp_path / "inspector.conf"
    path.write_text(text)
    return ["--config-file", str(path)]


def test_defaults_without_any_file():
    conf = config.load([])
    assert conf.listen_address == "127.0.0.1"
    assert conf.listen_port == 5050
    assert conf.worker.pool_size == (os.cpu_count() or 1)
    assert conf.worker.get_timeout == 3.0
    assert conf.clean_up_period == 30.0
    assert conf.clean_up.report_expiration == 86400.0
    assert conf.timeout == 900
    assert conf.firewall.blacklist_sync_period == 15.0
    assert conf.firewall.whitelist_sync_period == 15.0
    assert conf.worker.reboot_throttle == 0.0
    for group in ("ironic", "database", "coordination", "queue"):
        assert conf[group].max_retries >= 0
        assert conf[group].retry_interval > 0


def test_each_load_is_a_new_object():
    first, second = config.load([]), config.load([])
    assert first is not second


def test_ironic_inspector_file_loads():
    conf = config.load(["--config-file", str(IRONIC_INSPECTOR_CONF)])
    assert conf.clean_up_period == 60
    assert conf.api_max_limit == 500
    assert conf.processing.add_ports == "all"
    assert conf.processing.store_data == "database"
    assert conf.processing.processing_hooks.endswith("extra_hardware,lldp_basic")
    assert conf.processing.processing_hooks.startswith("ramdisk_error,")
    assert conf.pxe_filter.driver == "iptables"
    assert conf.coordination.backend_url == "memcached://localhost:11211"
    assert conf.ironic.endpoint_override == "http://127.0.0.1:6385"
    assert conf.ironic.auth_type == "none"
    assert conf.discovery.enroll_node_driver == "ipmi"


def test_ironic_inspector_old_names_map_to_new_options():
    conf = config.load(["--config-file", str(IRONIC_INSPECTOR_CONF)])
    assert conf.firewall.blacklist_sync_period == 15
    assert conf.worker.reboot_throttle == 5


def test_database_max_retries_keeps_oslo_db_forever():
    conf = config.load(["--config-file", str(IRONIC_INSPECTOR_CONF)])
    assert conf.database.max_retries == -1


@pytest.mark.parametrize(
    ("text", "names", "allowed"),
    [
        ("[worker]\npool_size = 0\n", "[worker] pool_size", "an integer >= 1"),
        ("[worker]\nget_timeout = 0\n", "[worker] get_timeout", "a number >= 0.001"),
        ("[DEFAULT]\nclean_up_period = 0\n", "[DEFAULT] clean_up_period", ">= 0.001"),
        ("[DEFAULT]\ntimeout = 0\n", "[DEFAULT] timeout", "an integer >= 1"),
        (
            "[clean_up]\nreport_expiration = -1\n",
            "[clean_up] report_expiration",
            ">= 0.001",
        ),
        (
            "[firewall]\nblacklist_sync_period = 31\n",
            "[firewall] blacklist_sync_period",
            "a number from 0.0 to 30.0",
        ),
        (
            "[pxe_filter]\nsync_period = 60\n",
            "[pxe_filter] sync_period",
            "a number from 0.0 to 30.0",
        ),
        (
            "[firewall]\nwhitelist_sync_period = -1\n",
            "[firewall] whitelist_sync_period",
            "a number from 0.0 to 30.0",
        ),
        ("[worker]\nreboot_throttle = -1\n", "[worker] reboot_throttle", ">= 0.0"),
        ("[ironic]\nmax_retries = -2\n", "[ironic] max_retries", ">= 0"),
        ("[database]\nretry_interval = 0\n", "[database] retry_interval", ">= 0.001"),
        ("[coordination]\nmax_retries = -1\n", "[coordination] max_retries", ">= 0"),
        ("[database]\nmax_retries = -2\n", "[database] max_retries", ">= -1"),
        ("[queue]\nretry_interval = 0\n", "[queue] retry_interval", ">= 0.001"),
        ("[DEFAULT]\nlisten_port = 70000\n", "[DEFAULT] listen_port", "0 to 65535"),
        ("[processing]\nstore_data = swift\n", "[processing] store_data", "one of"),
        ("[DEFAULT]\nauth_strategy = magic\n", "[DEFAULT] auth_strategy", "one of"),
        ("[worker]\npool_size = many\n", "[worker] pool_size", "an integer >= 1"),
    ],
)
def test_out_of_range_names_option_and_range(tmp_path, text, names, allowed):
    with pytest.raises(ConfigError) as info:
        config.load(write(tmp_path, text))
    assert names in info.value.message
    assert allowed in info.value.message
    assert str(tmp_path / "inspector.conf") in info.value.message


def test_every_problem_is_listed_at_once(tmp_path):
    with pytest.raises(ConfigError) as info:
        config.load(write(tmp_path, "[worker]\npool_size = 0\nget_timeout = -1\n"))
    assert "pool_size" in info.value.message
    assert "get_timeout" in info.value.message


def test_timeout_above_design_bound_warns(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        conf = config.load(write(tmp_path, "[DEFAULT]\ntimeout = 3600\n"))
    assert conf.timeout == 3600
    assert "above the design's bound of 900" in caplog.text


def test_timeout_within_bound_does_not_warn(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        config.load(write(tmp_path, "[DEFAULT]\ntimeout = 900\n"))
    assert "bound" not in caplog.text


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        config.load(["--config-file", str(tmp_path / "nope.conf")])


def test_unparsable_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot parse"):
        config.load(write(tmp_path, "this is not ini\n[[[\n"))


def test_config_dir_is_read_after_files(tmp_path):
    confd = tmp_path / "inspector.conf.d"
    confd.mkdir()
    (confd / "10-worker.conf").write_text("[worker]\npool_size = 7\n")
    args = [*write(tmp_path, "[worker]\npool_size = 3\n"), "--config-dir", str(confd)]
    assert config.load(args).worker.pool_size == 7


def test_later_config_file_wins(tmp_path):
    first = tmp_path / "a.conf"
    second = tmp_path / "b.conf"
    first.write_text("[DEFAULT]\nlisten_port = 6000\n")
    second.write_text("[DEFAULT]\nlisten_port = 6001\n")
    args = ["--config-file", str(first), "--config-file", str(second)]
    assert config.load(args).listen_port == 6001


def test_sample_config_is_current():
    sample = ROOT / "etc" / "inspector" / "inspector.conf.sample"
    assert sample.read_text() == config_cmd.render_sample(), (
        "etc/inspector/inspector.conf.sample is stale: run "
        "`inspector config sample > etc/inspector/inspector.conf.sample`"
    )


def test_sample_config_names_every_option():
    text = config_cmd.render_sample()
    for group, opts in config.list_opts():
        assert f"[{group}]" in text
        for opt in opts:
            assert f"#{opt.dest} =" in text, f"[{group}] {opt.dest} missing"


def test_sample_config_loads_as_is(tmp_path):
    assert config.load(write(tmp_path, config_cmd.render_sample())).listen_port == 5050


def test_ironic_pxe_filters_option_names_read_from_ironics_file_with_a_warning(tmp_path, caplog):
    ironic = tmp_path / "ironic.conf"
    ironic.write_text(
        "[DEFAULT]\nhost = controller1\n"
        "[pxe_filter]\ndhcp_hostsdir = /var/lib/ironic/hostsdir\n"
        "supported_inspect_interfaces = agent,redfish\nsync_period = 20\n"
        "[database]\nconnection = mysql+pymysql://ironic:secret@db/ironic\n"
    )
    ours = write(tmp_path, "[pxe_filter]\nwhitelist_source = ironic\n")
    with caplog.at_level(logging.WARNING):
        conf = config.load(["--config-file", str(ironic), *ours])
        assert conf.dnsmasq_pxe_filter.dhcp_hostsdir == "/var/lib/ironic/hostsdir"
        assert conf.pxe_filter.inspect_interfaces == ["agent", "redfish"]
        assert conf.firewall.blacklist_sync_period == 20
    # oslo.config warns once a process for each name (sync_period: tested above).
    warned = caplog.text
    for old, new in (
        (
            '"dhcp_hostsdir" from group "pxe_filter"',
            '"dhcp_hostsdir" from group "dnsmasq_pxe_filter"',
        ),
        ('"supported_inspect_interfaces" from group "pxe_filter"', '"inspect_interfaces"'),
    ):
        assert old in warned and new in warned, warned
