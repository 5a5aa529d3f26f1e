"""The extra_hardware hook: the ramdisk's extra-hardware "data" list of 4-item records
turned into the nested dict data["extra"][a][b][c] = value, for introspection rules.

Like ironic-inspector, the raw "data" key is dropped from the processed data; unlike it,
nothing is written to object storage or to the node's extra.
"""

import logging
from typing import Any

from inspector.processing.context import ProcessingContext
from inspector.processing.hooks.base import ProcessingHook

LOG = logging.getLogger(__name__)

#: The size of one record of the hardware library (eDeploy) format.
EDEPLOY_ITEM_SIZE = 4


class ExtraHardwareHook(ProcessingHook):
    """data["data"] ([[a, b, c, value], ...]) -> data["extra"] ({a: {b: {c: value}}})."""

    def before_update(self, context: ProcessingContext) -> None:
        data = context.data
        if "data" not in data:
            LOG.warning("[node %s] no extra hardware data from the ramdisk", context.node.uuid)
            return
        records = data.pop("data")
        if is_edeploy(records):
            data["extra"] = convert(records)
        else:
            LOG.warning(
                "[node %s] extra hardware data is not in the eDeploy format: not converted",
                context.node.uuid,
            )


#: What the first three items of a record may be: they become keys of nested dicts.
_KEYS = (str, int, float, bool, type(None))


def is_edeploy(records: Any) -> bool:
    return isinstance(records, list) and all(
        isinstance(item, list)
        and len(item) == EDEPLOY_ITEM_SIZE
        and all(isinstance(key, _KEYS) for key in item[:3])
        for item in records
    )


def convert(records: list[list[Any]]) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    for first, second, third, raw in records:
        converted.setdefault(first, {}).setdefault(second, {})[third] = _number(raw)
    return converted


def _number(value: Any) -> Any:
    """An integer when the value reads as one (the format has only strings), else as is."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return value
