"""[pci_devices] options of the pci_devices processing hook (ironic-inspector's names)."""

from oslo_config import cfg

GROUP = "pci_devices"

OPTS = [
    cfg.MultiStrOpt(
        "alias",
        default=[],
        help="An alias for PCI devices identified by vendor_id and product_id, as JSON: "
        '{"vendor_id": "1234", "product_id": "5678", "name": "pci_dev1"}. '
        "The hook sets a capability of that name to the number of such devices. "
        "Repeat the option for several aliases.",
    ),
]
