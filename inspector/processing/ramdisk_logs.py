"""Ramdisk logs: written to [processing] ramdisk_logs_dir (when set) with ironic-inspector's
file name template, on a ramdisk error or always with always_store_ramdisk_logs.
Never stored with the introspection data, never logged."""

import base64
import binascii
import datetime
import logging
import os
import tempfile
from typing import Any

from oslo_config import cfg

LOG = logging.getLogger(__name__)


def file_name(
    conf: cfg.ConfigOpts, node_uuid: str, data: dict[str, Any], now: datetime.datetime
) -> str:
    inventory = given if isinstance(given := data.get("inventory"), dict) else {}
    return conf.processing.ramdisk_logs_filename_format.format(
        uuid=node_uuid or "unknown",
        bmc=inventory.get("bmc_address") or "unknown",
        mac=data.get("boot_interface") or "unknown",
        dt=now,
    )


def store(conf: cfg.ConfigOpts, node_uuid: str, data: dict[str, Any], logs: Any) -> str | None:
    """Write the logs when configured to; the file's path, or None when not written."""
    directory = conf.processing.ramdisk_logs_dir
    if not directory or not logs or not isinstance(logs, str):
        return None
    if not (data.get("error") or conf.processing.always_store_ramdisk_logs):
        return None
    try:
        content = base64.b64decode(logs, validate=True)
    except (binascii.Error, ValueError):
        LOG.warning("[node %s] ramdisk logs are not valid base64: not stored", node_uuid)
        return None
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    path = os.path.join(directory, file_name(conf, node_uuid, data, now))
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, delete=False) as handle:
            handle.write(content)
        os.replace(handle.name, path)
    except OSError as exc:
        LOG.error("[node %s] cannot write ramdisk logs to %s: %s", node_uuid, path, exc)
        return None
    LOG.info("[node %s] ramdisk logs stored in %s", node_uuid, path)
    return path
