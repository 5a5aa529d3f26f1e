"""[ironic_history] options: Ironic's built-in inspections kept in the introspection history."""

from oslo_config import cfg

GROUP = "ironic_history"

OPTS = [
    cfg.BoolOpt(
        "enabled",
        default=False,
        help="Keep the inventories of Ironic's own (built-in, agent) inspections in the "
        "introspection history, with their hardware drift, notification and metric: a "
        "leader-elected periodic task lists the nodes by inspection_finished_at (one "
        "fields-limited listing) and reads each newly inspected node's inventory. Needs "
        "[processing] store_data = database.",
    ),
    cfg.FloatOpt(
        "period",
        default=60.0,
        min=1.0,
        help="Seconds between two runs of the task.",
    ),
]
