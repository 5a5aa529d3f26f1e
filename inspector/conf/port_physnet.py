"""[port_physnet] options of the physnet_cidr_map processing hook (ironic-inspector's names)."""

from oslo_config import cfg

GROUP = "port_physnet"

OPTS = [
    cfg.ListOpt(
        "cidr_map",
        default=[],
        sample_default="10.10.10.0/24:physnet_a,2001:db8::/64:physnet_b",
        help="Mapping of IP subnet CIDR to physical network, as CIDR:PHYSNET items. "
        "The physnet_cidr_map hook sets physical_network of the ports whose interface "
        "has an address in the subnet.",
    ),
]
