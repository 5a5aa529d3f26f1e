"""[capabilities] options of the capabilities processing hook (ironic-inspector's names)."""

from oslo_config import cfg

GROUP = "capabilities"

#: ironic-inspector's default: CPU flag -> capability set to "true" when the flag is present.
DEFAULT_CPU_FLAGS = {
    "vmx": "cpu_vt",
    "svm": "cpu_vt",
    "aes": "cpu_aes",
    "pse": "cpu_hugepages",
    "pdpe1gb": "cpu_hugepages_1g",
    "smx": "cpu_txt",
}

OPTS = [
    cfg.BoolOpt(
        "boot_mode",
        default=False,
        help="Store the boot mode (bios or uefi) as the boot_mode capability.",
    ),
    cfg.DictOpt(
        "cpu_flags",
        default=DEFAULT_CPU_FLAGS,
        help="Mapping between a CPU flag and the capability set when the flag is present.",
    ),
]
