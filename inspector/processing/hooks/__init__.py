"""Processing hooks: the ironic-inspector plugins that turn ramdisk data into node changes.

Hooks only record changes on the ProcessingContext; they never call Ironic. `load` builds
the configured list, `run` runs it (see docs/processing-hooks.md).
"""

from inspector.processing.hooks.base import ProcessingHook, load, run

__all__ = ["ProcessingHook", "load", "run"]
