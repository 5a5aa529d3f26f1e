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
    cfg.StrOpt(
        "backend",
        default="auto",
        choices=[
            ("auto", "the backend of the host's `iptables` command (its alternatives link)"),
            ("nft", "iptables-nft-restore and friends: the nf_tables backend"),
            ("legacy", "iptables-legacy-restore and friends: the legacy x_tables backend"),
        ],
        help="Which iptables backend the iptables and ipset drivers write to. auto follows "
        "the host, so the driver never mixes backends by itself. legacy writes 10,000 "
        "MACs about twice as fast as nft, but any change rewrites the whole filter table "
        "(a single change costs more than with nft, see docs/performance.md); a named "
        "backend refuses to start while the other one holds our chains and warns while it "
        "holds anybody's rules. Not an ironic-inspector option.",
    ),
]
