"""The firewall leader's cadence of polls of Ironic's nodes under inspection: fast while
no Ironic notification was heard lately or none is listened to, slow while they flow;
and its wiring to the channel's notifications."""

import pytest

from inspector.broker.announcements import LocalChannel
from inspector.firewall import ironic_source
from inspector.firewall.cadence import SPENT_KEPT, Cadence
from tests.fakes.dlm import FakeDLM
from tests.fakes.ironic import FakeIronic
from tests.unit.test_firewall_ironic_source import Clock
from tests.unit.test_firewall_manager import Host, Log

SLOW, FAST, QUIET = 15.0, 1.0, 60.0


@pytest.fixture
def clock():
    return Clock()


def test_without_notifications_listened_to_the_leader_polls_fast(clock):
    cadence = Cadence(SLOW, FAST, QUIET, listening=False, clock=clock)
    assert cadence() == FAST
    cadence.heard()  # cannot happen without a listener; changes nothing anyway
    assert cadence() == FAST and not cadence.is_notified()


def test_listened_to_but_none_heard_yet_the_leader_polls_fast(clock):
    assert Cadence(SLOW, FAST, QUIET, listening=True, clock=clock)() == FAST


def test_slow_while_notifications_flow_fast_again_once_they_stop(clock):
    cadence = Cadence(SLOW, FAST, QUIET, listening=True, clock=clock)
    cadence.heard()
    assert cadence() == SLOW and cadence.is_notified()
    clock.now += QUIET - 0.1
    assert cadence() == SLOW
    clock.now += 0.1
    assert cadence() == FAST and not cadence.is_notified()
    cadence.heard()
    assert cadence() == SLOW


@pytest.mark.parametrize(
    ("slow", "fast", "notified", "period"),
    [
        (15.0, 0.0, False, 15.0),  # fast polling off: the slow period always
        (0.0, 1.0, False, 1.0),  # no slow polls: fast still without notifications
        (0.0, 1.0, True, 0.0),  # ... and none while they flow (notifications alone)
        (0.5, 1.0, False, 0.5),  # a slow period shorter than the fast one wins
    ],
)
def test_either_period_may_be_turned_off(clock, slow, fast, notified, period):
    cadence = Cadence(slow, fast, QUIET, listening=True, clock=clock)
    if notified:
        cadence.heard()
    assert cadence() == period


def test_only_ironic_notifications_slow_the_leader_down(conf):
    conf.set_override("ironic_topic", "ironic_versioned_notifications", group="firewall")
    channel = LocalChannel()
    host = Host(FakeDLM(), "host", Log())
    view = ironic_source.attach(host.manager, FakeIronic(), conf, channel)
    host.manager.listen(channel)  # the Feed hands Ironic's notifications to the view
    assert view.cadence() == conf.firewall.inspection_poll_interval
    channel.deliver("inspector.firewall.status.request", {})
    assert view.cadence() == conf.firewall.inspection_poll_interval
    channel.deliver("baremetal.node.power_set.end", {"ironic_object.data": {}})
    assert view.cadence() == conf.firewall.whitelist_sync_period


def test_without_a_channel_notifications_are_not_expected(conf):
    conf.set_override("ironic_topic", "ironic_versioned_notifications", group="firewall")
    view = ironic_source.attach(Host(FakeDLM(), "host", Log()).manager, FakeIronic(), conf)
    assert not view.cadence.listening


def test_a_slow_poll_stretches_the_fast_period_to_keep_ironics_share(clock):
    cadence = Cadence(SLOW, FAST, QUIET, listening=False, share=0.02, clock=clock)
    cadence.spent(0.012)  # 1.2 % of a second: the fast period holds
    assert cadence() == FAST
    for _ in range(SPENT_KEPT):  # two listings at 10,000 nodes, every time
        cadence.spent(0.036)
    assert cadence() == pytest.approx(1.8)
    for _ in range(SPENT_KEPT):  # hundreds of nodes under inspection: no slower than slow
        cadence.spent(0.5)
    assert cadence() == SLOW
    cadence.spent(0.004)  # one quick answer: Ironic is not the one slow
    assert cadence() == FAST


def test_one_slow_reconcile_stretches_nothing(clock):
    cadence = Cadence(SLOW, FAST, QUIET, listening=False, share=0.02, clock=clock)
    cadence.spent(0.010)
    cadence.spent(0.400)  # this host starved of CPU a moment
    assert cadence() == FAST


def test_the_leaders_reconciles_tell_the_cadence_their_time(conf):
    conf.set_override("inspection_poll_max_share", 0.5, group="firewall")
    ironic = FakeIronic()
    host = Host(FakeDLM(), "host", Log())
    view = ironic_source.attach(host.manager, ironic, conf)
    assert view.cadence.last_spent == 0
    host.manager._whitelist_poller.poll()
    assert view.cadence._spent
    assert view.cadence() == conf.firewall.inspection_poll_interval  # not stretched
