"""Elections: builds a process's leader elections (the periodic clean-up, the
notifications, the PXE firewall), each left when the process stops."""

import contextlib
import dataclasses
from typing import TYPE_CHECKING

from oslo_config import cfg

from inspector.coordination import Coordinator
from inspector.coordination.election import Body, Election
from inspector.lifecycle import Lifecycle, Outages

if TYPE_CHECKING:  # the store (SQLAlchemy): `inspector pxe-filter` for Ironic has none
    from inspector.store import Store

#: Seconds an election may take to reset, release and leave after shutdown.
JOIN_BOUND = 30.0


@dataclasses.dataclass
class Elections:
    """One election per singleton kind, all on one DLM member and fenced by leadership
    terms in the store (when the process has one: `inspector pxe-filter` may not); each
    is left (joined) when `stack` closes, the last made first."""

    conf: cfg.ConfigOpts
    coordinator: Coordinator
    db: "Store | None"
    lifecycle: Lifecycle
    budget: Outages
    stack: contextlib.ExitStack
    #: Each election made, by singleton kind.
    made: dict[str, Election] = dataclasses.field(default_factory=dict)

    def make(self, kind: str, body: Body) -> Election:
        """The election of `kind`, whose leader runs `body`; not started."""
        group = self.conf.coordination
        election = Election(
            self.coordinator,
            kind,
            body,
            self.lifecycle,
            self.budget,
            interval=group.election_interval,
            claim=None if self.db is None else self.db.claim_leadership,
        )
        self.stack.callback(election.join, group.lease_timeout + JOIN_BOUND)
        self.made[kind] = election
        return election
