"""cmd.elections.Elections: each election it makes runs for its kind on the process's
DLM member, claims its terms in the store, and is left when the stack closes."""

import contextlib
import threading

from inspector.cmd.elections import Elections
from inspector.lifecycle import Lifecycle, Outages, RetryPolicy
from tests.fakes.dlm import FakeDLM
from tests.integration.cluster import wait_for


def test_an_election_leads_claims_its_term_and_is_left_on_exit(conf, store):
    conf.set_override("election_interval", 0.01, group="coordination")
    dlm = FakeDLM()
    member = dlm.member("worker-1")
    lifecycle = Lifecycle()
    budget = Outages(lifecycle, {"DLM": RetryPolicy(100, 0.01)})
    leading = threading.Event()

    def body(leadership) -> None:
        leading.set()
        while not leadership.wait(0.01):
            pass

    with contextlib.ExitStack() as stack:
        elections = Elections(conf, member, store, lifecycle, budget, stack)
        election = elections.make("periodic", body)
        assert elections.made == {"periodic": election}
        election.start()
        wait_for(leading.is_set, 10.0, message="the only candidate leads")
        assert store.leadership("periodic").holder == "worker-1"
        assert dlm.groups["inspector-periodic"] == {"worker-1"}
        lifecycle.stop("test")
    # Closing the stack joined the election: its thread left the group.
    assert dlm.groups["inspector-periodic"] == set()
