"""The processing hook interface, the table of in-tree hooks and the loading of the
configured list, in order, with each hook's dependencies checked.

Must not call Ironic: hooks record changes on the ProcessingContext only.
"""

import contextlib
import importlib
import importlib.metadata
import logging
from collections.abc import Iterator
from typing import Any

from oslo_config import cfg

from inspector.errors import ConfigError
from inspector.processing.context import ProcessingContext, ProcessingError

LOG = logging.getLogger(__name__)

#: Entry point group of out-of-tree hooks (classes deriving from ProcessingHook).
ENTRY_POINT_GROUP = "inspector.hooks.processing"
#: ironic-inspector's group: its entries are used only when they derive from ProcessingHook;
#: ironic-inspector's own plugins (before_update(introspection_data, node_info)) do not.
LEGACY_ENTRY_POINT_GROUP = "ironic_inspector.hooks.processing"

_HOOKS = "inspector.processing.hooks"

#: In-tree hooks: name -> "module:Class", imported only when configured.
BUILTIN = {
    "ramdisk_error": f"{_HOOKS}.standard:RamdiskErrorHook",
    "root_disk_selection": f"{_HOOKS}.standard:RootDiskSelectionHook",
    "scheduler": f"{_HOOKS}.standard:SchedulerHook",
    "validate_interfaces": f"{_HOOKS}.standard:ValidateInterfacesHook",
    "capabilities": f"{_HOOKS}.capabilities:CapabilitiesHook",
    "pci_devices": f"{_HOOKS}.pci_devices:PciDevicesHook",
    "extra_hardware": f"{_HOOKS}.extra_hardware:ExtraHardwareHook",
    "raid_device": f"{_HOOKS}.raid_device:RaidDeviceDetection",
    "lldp_basic": f"{_HOOKS}.lldp_basic:LLDPBasicProcessingHook",
    "local_link_connection": f"{_HOOKS}.local_link_connection:GenericLocalLinkConnectionHook",
    "physnet_cidr_map": f"{_HOOKS}.physnet_cidr_map:PhysnetCidrMapHook",
    "accelerators": f"{_HOOKS}.accelerators:AccelDevicesHook",
}


class ProcessingHook:
    """One step of processing. Subclasses override either method or both."""

    #: The name in [processing] processing_hooks (load() sets it on the instance).
    name: str = ""
    #: Hooks that must be listed before this one (they produce data it reads).
    dependencies: tuple[str, ...] = ()

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        """Read and check options once, at start-up; raise ConfigError when invalid."""

    def before_processing(self, data: dict[str, Any], conf: cfg.ConfigOpts) -> None:
        """Validate and normalise the ramdisk data in place; may raise ProcessingError.

        Runs for every hook before any hook's before_update."""

    def before_update(self, context: ProcessingContext) -> None:
        """Compute the changes and record them on context.changes (and results in
        context.data); may raise ProcessingError."""


def inventory(data: dict[str, Any]) -> dict[str, Any]:
    """The data's inventory, checked as ironic-inspector does (disks defaults to [])."""
    found = data.get("inventory")
    if not found or not isinstance(found, dict):
        raise ProcessingError("Hardware inventory is empty or missing")
    if not found.get("interfaces"):
        raise ProcessingError("No network interfaces provided in the inventory")
    if not found.get("disks"):
        found["disks"] = []
    return found


def load(conf: cfg.ConfigOpts) -> list[ProcessingHook]:
    """The hooks of [processing] processing_hooks, in order, instantiated.

    ConfigError for an unknown hook, a hook whose dependency is not listed before it,
    or an entry point that does not implement ProcessingHook."""
    hooks: list[ProcessingHook] = []
    for name in _names(conf.processing.processing_hooks):
        cls = _find(name)
        listed = [hook.name for hook in hooks]
        missing = [dep for dep in cls.dependencies if dep not in listed]
        if missing:
            raise ConfigError(
                f"[processing] processing_hooks: hook {name} needs {', '.join(missing)} "
                "listed before it"
            )
        hooks.append(_instantiate(name, cls, conf))
    return hooks


#: What a hook raises when it meets data of a shape it did not expect (the raw data's
#: schema rules this out for the fields the in-tree hooks read; not for other hooks').
MALFORMED_DATA_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def run(hooks: list[ProcessingHook], context: ProcessingContext) -> None:
    """before_processing of every hook in order, then before_update of every hook.

    A hook failing on data of an unexpected shape is a ProcessingError naming the hook
    and the step, not the bare AttributeError or TypeError text."""
    for hook in hooks:
        LOG.debug("[node %s] hook %s: before_processing", context.node.uuid, hook.name)
        with _malformed(hook, "before_processing"):
            hook.before_processing(context.data, context.conf)
    for hook in hooks:
        LOG.debug("[node %s] hook %s: before_update", context.node.uuid, hook.name)
        with _malformed(hook, "before_update"):
            hook.before_update(context)


@contextlib.contextmanager
def _malformed(hook: ProcessingHook, step: str) -> Iterator[None]:
    try:
        yield
    except ProcessingError:
        raise
    except MALFORMED_DATA_ERRORS as exc:
        raise ProcessingError(
            f"Hook {hook.name} ({step}) cannot process the ramdisk data: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _names(text: str) -> list[str]:
    names: list[str] = []
    for name in (item.strip() for item in text.split(",")):
        if name and name not in names:
            names.append(name)
    return names


def _find(name: str) -> type[ProcessingHook]:
    target = BUILTIN.get(name)
    if target is not None:
        module, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module), attribute)
    for group in (ENTRY_POINT_GROUP, LEGACY_ENTRY_POINT_GROUP):
        for entry_point in importlib.metadata.entry_points(group=group):
            if entry_point.name == name:
                return _from_entry_point(entry_point, group)
    known = set(BUILTIN)
    known.update(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    raise ConfigError(
        f"[processing] processing_hooks: unknown hook {name!r}; "
        f"known hooks: {', '.join(sorted(known))}"
    )


def _from_entry_point(entry_point: Any, group: str) -> type[ProcessingHook]:
    where = f"hook {entry_point.name} ({entry_point.value}, entry point group {group})"
    try:
        loaded = entry_point.load()
    except Exception as exc:  # a plugin can fail in any way; start-up must say which
        raise ConfigError(f"cannot load {where}: {exc}") from exc
    if isinstance(loaded, type) and issubclass(loaded, ProcessingHook):
        return loaded
    if group == LEGACY_ENTRY_POINT_GROUP:
        raise ConfigError(
            f"{where} has ironic-inspector's plugin interface, which needs node_info and "
            f"calls Ironic itself; port it to inspector.processing.hooks.ProcessingHook "
            f"and register it in {ENTRY_POINT_GROUP} (docs/processing-hooks.md)"
        )
    raise ConfigError(f"{where} is not a subclass of inspector.processing.hooks.ProcessingHook")


def _instantiate(name: str, cls: type[ProcessingHook], conf: cfg.ConfigOpts) -> ProcessingHook:
    try:
        hook = cls(conf)
    except ConfigError:
        raise
    except Exception as exc:  # an out-of-tree hook's constructor: report it as config
        raise ConfigError(f"hook {name} cannot start: {exc}") from exc
    hook.name = name
    return hook
