"""[discovery] options: how unknown nodes posting to /v1/continue are enrolled."""

from oslo_config import cfg

GROUP = "discovery"

OPTS = [
    cfg.StrOpt(
        "enroll_node_driver",
        default="fake-hardware",
        help="Ironic driver (hardware type) of nodes enrolled by discovery.",
    ),
    cfg.DictOpt(
        "enroll_node_fields",
        default={},
        help="Additional fields set on nodes enrolled by discovery.",
    ),
    cfg.ListOpt(
        "enabled_bmc_address_version",
        default=["4", "6"],
        item_type=cfg.types.String(choices=["4", "6"]),
        help="IP versions of BMC addresses stored for lookup, in order of preference.",
    ),
]
