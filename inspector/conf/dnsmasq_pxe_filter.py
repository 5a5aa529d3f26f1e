"""[dnsmasq_pxe_filter] options: the dnsmasq hostsdir firewall driver."""

from oslo_config import cfg

GROUP = "dnsmasq_pxe_filter"

OPTS = [
    cfg.StrOpt(
        "dhcp_hostsdir",
        default="/var/lib/inspector/dhcp-hostsdir",
        deprecated_opts=[cfg.DeprecatedOpt("dhcp_hostsdir", group="pxe_filter")],
        help="dnsmasq --dhcp-hostsdir directory written by the dnsmasq driver "
        "(ironic-pxe-filter's [pxe_filter] dhcp_hostsdir, read from an Ironic "
        "configuration file with a deprecation warning).",
    ),
    cfg.BoolOpt(
        "purge_dhcp_hostsdir",
        default=True,
        help="Remove the hostsdir entries on start-up and shut-down.",
    ),
    cfg.StrOpt(
        "dnsmasq_start_command",
        default="",
        help="Command run to start dnsmasq once the filter is in place.",
    ),
    cfg.StrOpt(
        "dnsmasq_stop_command",
        default="",
        help="Command run to stop dnsmasq when the filter shuts down.",
    ),
]
