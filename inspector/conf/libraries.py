"""The options a library reads in the section it owns, by name: [ironic] is keystoneauth's
(its session, adapter and auth options), [keystone_authtoken] keystonemiddleware's (with
keystoneauth's auth options), [oslo_policy] oslo.policy's; a section an `auth_section`
names holds keystoneauth's auth options. For the warning about what a file sets that
nothing reads (inspector.conf.compat): a name none of them reads is warned about.

keystoneauth reads the options of the `auth_type`'s plugin: every installed plugin's
options count (password, username, auth_url, project_name, user_domain_name,
application_credential_secret...), each with its old names. The lists are built on
first use, once.
"""

import functools
import logging
from collections.abc import Iterable
from importlib import metadata

LOG = logging.getLogger(__name__)

__all__ = ["AUTH_SECTION_OWNERS", "reader", "reads", "reads_auth"]

#: The library that reads each of these sections, as a warning names it.
READERS = {
    "ironic": "keystoneauth",
    "keystone_authtoken": "keystonemiddleware or keystoneauth",
    "oslo_policy": "oslo.policy",
}
#: The sections whose `auth_section` names another section of keystoneauth's auth options.
AUTH_SECTION_OWNERS = ("ironic", "keystone_authtoken")


def reader(group: str) -> str | None:
    """The library that reads [group] whole, or None."""
    return READERS.get(group)


def reads(group: str, name: str) -> bool:
    """Whether the library that owns [group] reads `name` there (a name or an old name)."""
    names = _SECTIONS.get(group)
    return names is not None and _dest(name) in names()


def reads_auth(name: str) -> bool:
    """Whether keystoneauth reads `name` in a section an `auth_section` names."""
    return _dest(name) in _auth_names()


def _dest(name: str) -> str:
    return name.replace("-", "_")


def _names(opts: Iterable) -> frozenset[str]:
    """The names and old names of oslo.config's or keystoneauth's options."""
    names = set()
    for opt in opts:
        names.add(opt.dest)
        # oslo.config's DeprecatedOpt, or keystoneauth's own Opt.
        for old in getattr(opt, "deprecated_opts", None) or getattr(opt, "deprecated", None) or ():
            if old.name:
                names.add(_dest(old.name))
    return frozenset(names)


@functools.cache
def _auth_names() -> frozenset[str]:
    """auth_type, auth_section and the options of every auth plugin installed here."""
    from keystoneauth1 import loading  # noqa: PLC0415 - only when a file sets such a section

    opts = list(loading.get_auth_common_conf_options())
    for entry_point in metadata.entry_points(group=loading.PLUGIN_NAMESPACE):
        opts += _plugin_options(entry_point)
    return _names(opts)


def _plugin_options(entry_point: metadata.EntryPoint) -> list:
    """An auth plugin's options; none for a plugin that does not load. Not keystoneauth's
    listing: stevedore logs an ERROR for each plugin that does not load (the SAML ones
    without lxml), and this is only a listing."""
    try:
        plugin = entry_point.load()()
        return list(plugin.get_options()) if plugin.available else []
    except Exception as exc:  # a plugin's import may raise anything
        LOG.debug("auth plugin %s does not load: %s", entry_point.name, exc)
        return []


@functools.cache
def _ironic_names() -> frozenset[str]:
    from keystoneauth1 import loading  # noqa: PLC0415 - only when a file sets [ironic]

    session = loading.get_session_conf_options()
    adapter = loading.get_adapter_conf_options(include_deprecated=True)
    return _names([*session, *adapter]) | _auth_names()


@functools.cache
def _keystone_authtoken_names() -> frozenset[str]:
    # Imported here: it pulls in WebOb and oslo.cache, which only this section needs.
    from keystonemiddleware import auth_token  # noqa: PLC0415

    opts = [opt for _group, group_opts in auth_token.list_opts() for opt in group_opts]
    return _names(opts) | _auth_names()


@functools.cache
def _oslo_policy_names() -> frozenset[str]:
    from oslo_policy import opts  # noqa: PLC0415 - only when the section is set

    return _names(opt for _group, group_opts in opts.list_opts() for opt in group_opts)


_SECTIONS = {
    "ironic": _ironic_names,
    "keystone_authtoken": _keystone_authtoken_names,
    "oslo_policy": _oslo_policy_names,
}
