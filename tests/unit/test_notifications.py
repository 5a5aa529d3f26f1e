"""The notification outbox: written with the state change, delivered by the sender to
every driver, retried with backoff until accepted, never lost, never invented."""

import time

import pytest

from inspector import errors
from inspector.commit import change_for
from inspector.conf import notifications as notifications_opts
from inspector.coordination.election import Leadership
from inspector.lifecycle import Lifecycle, Outages
from inspector.machine import Event, Machine, State
from inspector.notifications import choice
from inspector.notifications.drivers import DeliveryFailed
from inspector.notifications.sender import Sender
from inspector.store import Store, schema

NODE = "1b9c0d4e-7f2a-4c3b-9e8d-5a6b7c8d9e0f"


class Receiver:
    """A driver that refuses while `down`, and records what it accepted."""

    name = "test"

    def __init__(self):
        self.down = False
        self.accepted = []

    def send(self, payload):
        if self.down:
            raise DeliveryFailed("receiver down")
        self.accepted.append(payload)


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'inspector.sqlite'}"
    schema.upgrade(url)
    db = Store.from_url(url, notify=True)
    yield db
    db.close()


def advance(store, event, request_id):
    node = None
    try:
        node = store.get_node(NODE)
    except errors.NotFound:
        pass
    transition = Machine().advance(State(node.state) if node else None, event)
    change = change_for(transition, NODE, node, request_id, store.clock(), status="done")
    return store.apply(change, node)


def introspect(store, prefix="r"):
    for number, event in enumerate((Event.INSPECT, Event.WAIT, Event.CONTINUE, Event.FINISH)):
        advance(store, event, f"{prefix}{number}")


def leadership():
    return Leadership("notifications", "me", 1, lease_seconds=60.0, acquired_at=time.monotonic())


def sender(store, receiver, poll_interval=0.01):
    return Sender(
        store, [receiver], Outages(Lifecycle(), {}), poll_interval=poll_interval, max_backoff=1.0
    )


def test_start_and_finish_are_written_with_their_state_changes(store):
    introspect(store)
    due = store.due_notifications()
    assert [n.event_type for n in due] == [
        "inspector.introspection.start",
        "inspector.introspection.finish",
    ]
    finish = due[1].payload
    assert finish["node_uuid"] == NODE and finish["state"] == "finished"
    assert finish["version"] == "1.0" and finish["id"] == due[1].id
    assert finish["duration_seconds"] >= 0
    assert finish["request_id"] == "r3"


def test_failure_carries_the_error(store):
    advance(store, Event.INSPECT, "a")
    advance(store, Event.WAIT, "b")
    advance(store, Event.ABORT, "c")
    error = store.due_notifications()[-1].payload
    assert error["event_type"] == "inspector.introspection.error"
    assert error["error"] == "Canceled by operator"


def test_a_refused_change_writes_no_notification(store):
    advance(store, Event.INSPECT, "a")
    stale = store.get_node(NODE)
    advance(store, Event.WAIT, "b")
    transition = Machine().advance(State.WAITING, Event.ABORT)
    with pytest.raises(errors.NodeBusy):
        store.apply(change_for(transition, NODE, stale, "c", store.clock(), status="done"), stale)
    assert [n.event_type for n in store.due_notifications()] == ["inspector.introspection.start"]


def test_nothing_is_written_without_drivers(tmp_path):
    url = f"sqlite:///{tmp_path / 'quiet.sqlite'}"
    schema.upgrade(url)
    quiet = Store.from_url(url)
    introspect(quiet)
    assert quiet.pending_notifications() == 0


def test_sender_delivers_once_and_retries_until_accepted(store):
    receiver = Receiver()
    receiver.down = True
    introspect(store)
    send = sender(store, receiver, poll_interval=0.3)
    assert send.deliver_due(leadership()) == 0
    assert store.pending_notifications() == 2
    assert store.due_notifications() == []  # postponed by 0.3 s: not due right away
    receiver.down = False
    lead = leadership()
    deadline = time.monotonic() + 5
    while store.pending_notifications() and time.monotonic() < deadline:
        send.deliver_due(lead)
        lead.wait(0.01)  # the sender's own wait between looks
    assert [p["event_type"] for p in receiver.accepted] == [
        "inspector.introspection.start",
        "inspector.introspection.finish",
    ]
    send.deliver_due(lead)
    assert len(receiver.accepted) == 2  # delivered ones are not sent again


def test_backoff_doubles_up_to_the_cap(store):
    send = sender(store, Receiver())
    assert [send.backoff(n) for n in (0, 1, 2)] == [0.01, 0.02, 0.04]
    assert send.backoff(50) == 1.0


def test_a_deposed_sender_sends_nothing(store):
    introspect(store)
    receiver = Receiver()
    lead = leadership()
    lead.reset.set()
    with pytest.raises(errors.InspectorError):
        sender(store, receiver).deliver_due(lead)
    assert receiver.accepted == []


def test_the_option_offers_the_drivers_of_the_table():
    (option,) = [o for o in notifications_opts.OPTS if o.name == "drivers"]
    assert sorted(option.type.item_type.choices) == sorted(choice.DRIVERS)


def test_each_named_driver_is_built_in_the_options_order(conf):
    names = ["messaging", "log", "http"]
    conf.set_override("drivers", names, group="notifications")
    conf.set_override("http_endpoint", "http://127.0.0.1:1/notify", group="notifications")
    conf.set_override("transport_url", "amqp://127.0.0.1:1//", group="notifications")
    drivers = choice.build(conf)  # nothing connects yet
    assert [driver.name for driver in drivers] == names
    assert drivers[0].url == "amqp://127.0.0.1:1//"
    assert drivers[2].endpoint == "http://127.0.0.1:1/notify"
