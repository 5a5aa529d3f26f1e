"""What the views need, built once per app by the factory: no globals, one object."""

import dataclasses

import flask
from oslo_config import cfg

from inspector.api.guard import Guard
from inspector.api.policy import Policy
from inspector.broker import Publisher
from inspector.ironic import IronicClient
from inspector.machine import Machine
from inspector.store import Store

EXTENSION = "inspector"


@dataclasses.dataclass
class Services:
    conf: cfg.ConfigOpts
    store: Store
    #: The work queue (broker.queue.WorkQueue); the API only puts requests on it.
    queue: Publisher
    ironic: IronicClient
    policy: Policy
    guard: Guard
    machine: Machine = dataclasses.field(default_factory=Machine)


def services() -> Services:
    return flask.current_app.extensions[EXTENSION]
