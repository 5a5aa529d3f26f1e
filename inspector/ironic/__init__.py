"""The Ironic client: what we read from and change in Ironic, over its REST API.

Owns the connection to Ironic, its retry policy and the mapping of its failures to our
errors; no keystoneauth or transport exception leaves this package. It decides nothing
about inspection itself.
"""

from inspector.ironic.bmc import bmc_addresses
from inspector.ironic.client import Ironic
from inspector.ironic.connection import API_VERSION, connect
from inspector.ironic.model import IronicNode, IronicPort

__all__ = ["API_VERSION", "Ironic", "IronicNode", "IronicPort", "bmc_addresses", "connect"]
