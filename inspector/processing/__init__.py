"""Processing of ramdisk data: lookup, hooks, introspection rules, discovery."""
