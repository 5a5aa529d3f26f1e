"""[iptables] options: the iptables and ipset firewall drivers."""

from oslo_config import cfg

GROUP = "iptables"

OPTS = [
    cfg.StrOpt(
        "dnsmasq_interface",
        default="br-ctlplane",
        help="Interface on which dnsmasq (the PXE/DHCP service) listens.",
    ),
    cfg.StrOpt(
        "firewall_chain",
        default="ironic-inspector",
        help="Prefix of the custom chains managed by the firewall.",
    ),
    cfg.ListOpt(
        "ethoib_interfaces",
        default=[],
        help="Ethernet-over-InfiniBand interfaces whose client MACs are filtered.",
    ),
    cfg.StrOpt(
        "ip_version",
        default="4",
        choices=[("4", "IPv4, DHCP port 67"), ("6", "IPv6, DHCPv6 port 547")],
        help="IP version of the rules.",
    ),
]
