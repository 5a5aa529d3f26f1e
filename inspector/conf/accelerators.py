"""[accelerators] options of the accelerators processing hook (ironic-inspector's names)."""

from oslo_config import cfg

GROUP = "accelerators"

OPTS = [
    cfg.StrOpt(
        "known_devices",
        help="YAML or JSON file with the known accelerator devices: a pci_devices list of "
        "{vendor_id, device_id, type, device_info}. Unset: a small in-tree list "
        "(NVIDIA Tesla T4 and GV100GL, as ironic-inspector's known_accelerators.yaml).",
    ),
]
