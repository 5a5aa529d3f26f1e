"""[processing] options: ironic-inspector's names for hooks, ports, data storage and power-off;
the time bound of introspection rules."""

from oslo_config import cfg

GROUP = "processing"

DEFAULT_HOOKS = (
    "ramdisk_error,root_disk_selection,scheduler,validate_interfaces,capabilities,pci_devices"
)

OPTS = [
    cfg.StrOpt(
        "add_ports",
        default="pxe",
        choices=[
            ("all", "all interfaces"),
            ("active", "interfaces with an IP address"),
            ("pxe", "only the PXE-booting interface"),
            ("disabled", "create no ports"),
        ],
        help="Which MACs get Ironic ports created for them during processing.",
    ),
    cfg.StrOpt(
        "keep_ports",
        default="all",
        choices=[
            ("all", "keep every port"),
            ("present", "keep ports whose MACs were present in the data"),
            ("added", "keep only the ports added in this run"),
        ],
        help="Which existing Ironic ports are kept during processing.",
    ),
    cfg.BoolOpt(
        "overwrite_existing",
        default=True,
        help="Overwrite node properties already set in Ironic.",
    ),
    cfg.StrOpt(
        "default_processing_hooks",
        default=DEFAULT_HOOKS,
        help="Comma-separated processing hooks that are always enabled.",
    ),
    cfg.StrOpt(
        "processing_hooks",
        default="$default_processing_hooks",
        help="Comma-separated processing hooks to run, in order. "
        "$default_processing_hooks stands for the default list.",
    ),
    cfg.StrOpt(
        "node_not_found_hook",
        help="Hook run when /v1/continue matches no node ('enroll' for discovery). "
        "Unset: such a ramdisk gets 404.",
    ),
    cfg.StrOpt(
        "store_data",
        default="none",
        choices=[("none", "keep nothing"), ("database", "in the store")],
        help="Where processed and raw introspection data are stored.",
    ),
    cfg.StrOpt(
        "ramdisk_logs_dir",
        help="Directory for ramdisk logs. Unset: ramdisk logs are not stored.",
    ),
    cfg.BoolOpt(
        "always_store_ramdisk_logs",
        default=False,
        help="Store ramdisk logs even when the ramdisk reports no error.",
    ),
    cfg.StrOpt(
        "ramdisk_logs_filename_format",
        default="{uuid}_{dt:%Y%m%d-%H%M%S.%f}.tar.gz",
        help="File name template of stored ramdisk logs ({uuid}, {bmc}, {dt}, {mac}).",
    ),
    cfg.BoolOpt(
        "power_off",
        default=True,
        help="Power the node off once processing has finished.",
    ),
    cfg.BoolOpt(
        "permit_active_introspection",
        default=False,
        help="Allow introspecting nodes in the active and rescue provision states.",
    ),
    cfg.BoolOpt(
        "update_pxe_enabled",
        default=True,
        help="Update the pxe_enabled flag of ports from the PXE-booting interface.",
    ),
    cfg.BoolOpt(
        "disk_partitioning_spacing",
        default=True,
        help="Leave 1 GiB of the root disk for partitioning when computing local_gb.",
    ),
    cfg.FloatOpt(
        "rules_evaluation_timeout",
        default=10.0,
        min=0.1,
        help="Seconds the introspection rules may take on one node, checked between rules, "
        "conditions, actions and the values a condition tests. Past them, the "
        "introspection ends in error naming the rule that was running, and nothing is "
        "sent to Ironic. Not in ironic-inspector.",
    ),
    cfg.IntOpt(
        "history_keep",
        default=10,
        min=1,
        help="Ended introspections kept per node, each with its raw and processed data "
        "(when store_data = database), for the history API and hardware drift; older "
        "ones are removed by the periodic expiry task, the newest never. 1 keeps only "
        "the latest, as ironic-inspector did. Not in ironic-inspector.",
    ),
]
