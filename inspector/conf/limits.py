"""[limits] options: how much work one ramdisk payload may cause (its interfaces, disks,
PCI devices and LLDP TLVs, checked by /v1/continue and again before processing) and how
many Ironic ports the processing of one node may create. ironic-inspector had none."""

from oslo_config import cfg

GROUP = "limits"

#: The longest LLDP TLV information string: its length field has 9 bits (IEEE 802.1AB).
LLDP_TLV_OCTETS = 511

OPTS = [
    cfg.IntOpt(
        "max_interfaces",
        default=256,
        min=1,
        help="Most network interfaces in one ramdisk payload (inventory.interfaces; also "
        "the entries of the legacy macs and lldp_raw fields); more: /v1/continue answers 400.",
    ),
    cfg.IntOpt(
        "max_disks",
        default=256,
        min=1,
        help="Most disks in one ramdisk payload (inventory.disks); more: 400.",
    ),
    cfg.IntOpt(
        "max_pci_devices",
        default=1024,
        min=1,
        help="Most PCI devices in one ramdisk payload (pci_devices); more: 400.",
    ),
    cfg.IntOpt(
        "max_lldp_tlvs",
        default=256,
        min=1,
        help="Most LLDP TLVs of one interface (its lldp list, or its lldp_raw entry); "
        "more: 400. One LLDPDU fits an Ethernet frame of 1500 octets: switches send tens "
        "of TLVs, a trunk naming its VLANs can send over a hundred.",
    ),
    cfg.IntOpt(
        "max_lldp_tlv_size",
        default=LLDP_TLV_OCTETS,
        min=1,
        help="Largest value of one LLDP TLV, in octets (the ramdisk sends it in hexadecimal, "
        "two characters an octet); larger: 400. 511 is the most IEEE 802.1AB allows.",
    ),
    cfg.IntOpt(
        "max_new_ports",
        default=64,
        min=1,
        help="Most Ironic ports the processing of one node may create (the interfaces "
        "[processing] add_ports selects that have no port yet). More: the introspection "
        "ends in error before anything is changed in Ironic.",
    ),
]
