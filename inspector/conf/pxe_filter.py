"""[pxe_filter] options: which firewall driver guards the PXE/DHCP service, and whose
inspections it lets boot (ours, or Ironic's own built-in inspection)."""

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
        "whitelist_source",
        default="inspector",
        choices=[
            ("inspector", "the nodes under introspection by Inspector (its database)"),
            (
                "ironic",
                "the nodes Ironic itself is inspecting (provision state `inspect wait` "
                "or `inspecting`), read from Ironic's API and notifications: the HA "
                "replacement of Ironic's ironic-pxe-filter (Ironic 2026.1 and later)",
            ),
        ],
        help="Whose inspections the firewall lets PXE-boot. With `ironic`, MACs Ironic "
        "does not know are answered on the open host only while auto_discovery is true "
        "or some node is under inspection (as ironic-pxe-filter does), never with "
        "deny_unknown_macs.",
    ),
    cfg.ListOpt(
        "inspect_interfaces",
        default=["agent"],
        deprecated_name="supported_inspect_interfaces",
        help="With whitelist_source = ironic: the inspect interfaces whose nodes are "
        "let through while inspecting (ironic-pxe-filter's "
        "supported_inspect_interfaces, read from an Ironic configuration file with a "
        "deprecation warning).",
    ),
    cfg.BoolOpt(
        "auto_discovery",
        default=False,
        help="With whitelist_source = ironic: set it as Ironic's [auto_discovery] "
        "enabled. True: the open host answers MACs Ironic does not know even while no "
        "node is under inspection (unless deny_unknown_macs).",
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
        "watchdog_timeout",
        default=10.0,
        min=1.0,
        help="Seconds systemd's watchdog lets the firewall loop of `inspector pxe-filter` "
        "or `inspector worker` go without progress before it kills the process: the "
        "unit's WatchdogSec= (the process refuses to start with a longer one). With a "
        "driver whose openness cannot expire by itself (dnsmasq), a new firewall leader "
        "waits this plus close_timeout (and half a second) after taking the lease before "
        "it opens, so that a frozen or killed leader is closed first (docs/firewall.md).",
    ),
    cfg.FloatOpt(
        "close_timeout",
        default=5.0,
        min=0.0,
        help="Seconds within which the unit's ExecStopPost=`inspector firewall close` "
        "closes a host's PXE service once systemd saw its process die, on a busy host "
        "too. Counted by a new leader's wait with the dnsmasq driver (see "
        "watchdog_timeout).",
    ),
    cfg.FloatOpt(
        "command_timeout",
        default=30.0,
        min=1.0,
        help="Seconds a firewall command may take before it is killed and the firewall is closed.",
    ),
]
