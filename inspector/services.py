"""The backends a service process shares between its parts (the durable store, the work
queue, the Ironic client), built from the configuration: the one builder that
`inspector api`, `inspector worker`, `inspector all` and the WSGI entry point
(`inspector.api.wsgi:application`) use. What only a worker needs (its DLM member, its
elections, its firewall) is wired by the command (inspector.cmd.wiring).
"""

import dataclasses

from oslo_config import cfg

from inspector.broker.queue import WorkQueue
from inspector.broker.tls import Tls
from inspector.broker.transports import Timeouts
from inspector.ironic.lazy import LazyIronic
from inspector.lifecycle import Lifecycle
from inspector.store import Store


@dataclasses.dataclass(frozen=True)
class Backends:
    store: Store
    queue: WorkQueue
    #: Built on its first call: a process without [ironic] options still starts.
    ironic: LazyIronic

    def close(self) -> None:
        """Close the queue's connections, then the store's; once their users stopped."""
        self.queue.close()
        self.store.close()


def open_store(conf: cfg.ConfigOpts) -> Store:
    """The store of [database] connection (alone: `inspector pxe-filter` needs no more)."""
    # With notification drivers, each start, finish and failure writes an outbox row.
    return Store.from_conf(conf, notify=bool(conf.notifications.drivers))


def build_services(conf: cfg.ConfigOpts, lifecycle: Lifecycle) -> Backends:
    """The process's backends, their retries given up when `lifecycle` shuts down."""
    return Backends(
        store=open_store(conf),
        queue=WorkQueue(
            conf.queue.transport_url,
            conf.queue.queue_name,
            max_retries=conf.queue.max_retries,
            retry_interval=conf.queue.retry_interval,
            shutdown=lifecycle.shutdown,
            visibility_timeout=conf.queue.visibility_timeout,
            tls=Tls.from_conf(conf),
            timeouts=Timeouts.from_conf(conf),
        ),
        ironic=LazyIronic(conf, shutdown=lifecycle.shutdown),
    )
