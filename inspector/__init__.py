"""Inspector: a highly available, ironic-inspector compatible introspection service."""

import warnings

__version__ = "0.1.0"

# oslo.messaging (the firewall channel) installs eventlet, which futurist (under tooz)
# imports whenever it is present, and eventlet warns about itself on import: noise on
# every command's stderr about a library we never run.
warnings.filterwarnings("ignore", message=r"(?s).*Eventlet is deprecated")
