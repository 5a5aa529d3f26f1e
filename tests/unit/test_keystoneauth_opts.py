"""inspector.conf.keystoneauth declares keystoneauth's options without importing it: each
list must stay equal to the library's (oslo.config's equality: every attribute of every
option), and registering them must register what keystoneauth's functions register."""

import importlib.metadata

import pytest
from keystoneauth1 import loading
from oslo_config import cfg

from inspector.conf import keystoneauth


def test_the_declared_options_are_keystoneauths():
    installed = importlib.metadata.version("keystoneauth1")
    assert keystoneauth.declared() is (installed == keystoneauth.DECLARED_FOR)
    if installed != keystoneauth.DECLARED_FOR:
        # Another release (OpenStack's pins): its own functions register its options
        # (the test below); the lists are compared where they are declared for.
        return
    assert keystoneauth.SESSION == loading.get_session_conf_options()
    assert keystoneauth.AUTH == loading.get_auth_common_conf_options()
    assert keystoneauth.ADAPTER == loading.get_adapter_conf_options()


def registered(conf: cfg.ConfigOpts) -> dict[str, list[cfg.Opt]]:
    """Each group's options, in their order (oslo.config keeps them in a private table)."""
    return {name: [o["opt"] for o in group._opts.values()] for name, group in conf._groups.items()}


@pytest.fixture(params=["as installed", "another release"])
def release(request, monkeypatch):
    """The installed keystoneauth, then as if another release were (its own functions)."""
    if request.param == "another release":
        monkeypatch.setattr(keystoneauth, "declared", lambda: False)
    return request.param


def test_registering_them_registers_what_keystoneauth_registers(tmp_path, release):
    config = tmp_path / "inspector.conf"
    # An auth_section moves auth_type to the section it names.
    config.write_text("[ironic]\nauth_section = ironic_auth\n[keystone_authtoken]\n")
    theirs, ours = cfg.ConfigOpts(), cfg.ConfigOpts()
    for conf in (theirs, ours):
        conf(["--config-file", str(config)], default_config_files=[])
    loading.register_session_conf_options(theirs, "ironic")
    loading.register_auth_conf_options(theirs, "ironic")
    loading.register_adapter_conf_options(theirs, "ironic")
    loading.register_auth_conf_options(theirs, "keystone_authtoken")
    keystoneauth.register(ours, "ironic")
    keystoneauth.register_auth(ours, "keystone_authtoken")
    assert registered(ours) == registered(theirs)
    assert "auth_type" in ours.ironic_auth and "auth_type" not in ours.ironic
    # keystoneauth's own registration over ours is no conflict (equal options).
    loading.register_auth_conf_options(ours, "ironic")
    loading.register_adapter_conf_options(ours, "ironic")
