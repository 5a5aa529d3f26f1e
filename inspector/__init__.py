"""Inspector: a highly available, ironic-inspector compatible introspection service."""

__version__ = "0.1.0"
