"""What the views need, built once per app by the factory: no globals, one object."""

import dataclasses
from typing import Any

import flask
from oslo_config import cfg

from inspector.machine import Machine
from inspector.store import Store

EXTENSION = "inspector"


@dataclasses.dataclass
class Services:
    conf: cfg.ConfigOpts
    store: Store
    queue: Any  # inspector.broker.queue.WorkQueue, or a test double with put()
    ironic: Any  # inspector.ironic.Ironic, or tests.fakes.ironic.FakeIronic
    policy: Any  # inspector.api.policy.Policy
    guard: Any  # inspector.api.guard.Guard
    machine: Machine = dataclasses.field(default_factory=Machine)


def services() -> Services:
    return flask.current_app.extensions[EXTENSION]
