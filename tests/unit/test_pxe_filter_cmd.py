"""`inspector pxe-filter`: what it refuses to start with (exit status 2, naming the
option), and the configuration docs/deployment.md gives it."""

import re

import pytest

from inspector import conf as config
from inspector.cmd import main, pxe_filter_cmd
from tests.integration.cluster import ROOT, render_config

#: A configuration it starts with: Ironic's inspections, a DLM, a standalone Ironic.
GOOD = {
    "pxe_filter": {"driver": "nftables", "whitelist_source": "ironic"},
    "coordination": {"backend_url": "redis://127.0.0.1:6379"},
    "ironic": {"auth_type": "none", "endpoint_override": "http://127.0.0.1:6385"},
}


def load(tmp_path, sections):
    path = tmp_path / "pxe-filter.conf"
    path.write_text(render_config(sections))
    return config.load(["--config-file", str(path)]), path


def merged(**changes):
    sections = {name: dict(values) for name, values in GOOD.items()}
    for name, values in changes.items():
        sections.setdefault(name, {}).update(values)
    return sections


def test_a_configuration_that_works_has_no_problem(tmp_path):
    conf, _ = load(tmp_path, GOOD)
    assert pxe_filter_cmd.problems(conf) == []


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"pxe_filter": {"driver": "noop"}}, "[pxe_filter] driver = noop"),
        ({"coordination": {"backend_url": "memory://"}}, "[coordination] backend_url = memory"),
        (
            {"coordination": {"backend_url": "memcached://127.0.0.1:11211"}},
            "[coordination] backend_url = memcached",
        ),
        (
            {"pxe_filter": {"whitelist_source": "inspector"}},
            "[pxe_filter] whitelist_source = inspector",
        ),
        ({"ironic": {"auth_type": "", "endpoint_override": ""}}, "[ironic]"),
        (
            {"firewall": {"whitelist_sync_period": 0, "inspection_poll_interval": 0}},
            "[firewall] whitelist_sync_period = 0, inspection_poll_interval = 0 and no",
        ),
    ],
)
def test_a_configuration_that_cannot_work_exits_2_naming_the_option(
    tmp_path, capsys, changes, named
):
    conf, path = load(tmp_path, merged(**changes))
    assert any(named in problem for problem in pxe_filter_cmd.problems(conf))
    assert main(["pxe-filter", "--config-file", str(path)]) == 2
    assert named in capsys.readouterr().err


def test_one_host_may_elect_in_process_when_it_says_it_is_alone(tmp_path):
    sections = merged(coordination={"backend_url": "memory://", "single_host": True})
    conf, _ = load(tmp_path, sections)
    assert pxe_filter_cmd.problems(conf) == []


def test_the_inspector_source_needs_the_database_and_ironic_for_the_blacklist(tmp_path):
    sections = merged(
        pxe_filter={"whitelist_source": "inspector"},
        database={"connection": "postgresql+psycopg://u:p@db/inspector"},
    )
    conf, _ = load(tmp_path, sections)
    assert pxe_filter_cmd.problems(conf) == []
    sections["ironic"] = {"auth_type": "", "endpoint_override": ""}
    conf, _ = load(tmp_path, sections)
    (problem,) = pxe_filter_cmd.problems(conf)
    assert problem.startswith("Ironic is not configured: [ironic]")


def test_the_deployment_doc_configuration_starts(tmp_path):
    text = (ROOT / "docs" / "deployment.md").read_text()
    # The PXE filter's configuration, then kolla-ansible's changes to it.
    blocks = [b for b in re.findall(r"```ini\n(.*?)```", text, re.S) if "whitelist_source" in b]
    assert len(blocks) == 2
    args = []
    for index, block in enumerate(blocks):
        path = tmp_path / f"pxe-filter-{index}.conf"
        path.write_text(block)
        args += ["--config-file", str(path)]
        conf = config.load(args)
        assert conf.pxe_filter.whitelist_source == "ironic"
        assert pxe_filter_cmd.problems(conf) == []
    assert conf.pxe_filter.driver == "dnsmasq" and not conf.firewall.ironic_topic
