"""[pxe_filter] options: which firewall driver guards the PXE/DHCP service."""

from oslo_config import cfg

GROUP = "pxe_filter"

OPTS = [
    cfg.StrOpt(
        "driver",
        default="noop",
        choices=[
            ("iptables", "iptables custom chains applied with iptables-restore"),
            ("ipset", "iptables with hash:mac sets, where the kernel supports them"),
            ("nftables", "one nftables table with ether_addr sets"),
            ("dnsmasq", "dnsmasq hostsdir entries (works behind DHCP relays)"),
            ("noop", "no filtering"),
        ],
        help="PXE filter driver. ironic-inspector's default was iptables; ours is "
        "noop so that a first start needs no privileges.",
    ),
    cfg.BoolOpt(
        "deny_unknown_macs",
        default=False,
        help="Block MACs that Ironic does not know (turns discovery off).",
    ),
    cfg.StrOpt(
        "root_helper",
        default="",
        help="Prefix of the firewall's privileged commands (iptables-restore, "
        "ip6tables-restore, nft, ipset, the dnsmasq start and stop commands), split "
        "like a shell would but run without one, e.g. `sudo -n`; see docs/firewall.md "
        "for a narrow sudo rule. Empty: run them directly (the service runs as root).",
    ),
    cfg.FloatOpt(
        "command_timeout",
        default=30.0,
        min=1.0,
        help="Seconds a firewall command may take before it is killed and the firewall is closed.",
    ),
]
