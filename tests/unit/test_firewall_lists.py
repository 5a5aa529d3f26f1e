"""firewall.lists: the one merge of snapshots with single changes (Merged, under both
MacList and Ironic's view), and the firewall channel's one subscriber (Feed): our
announcements into the lists, every Ironic notification to the ListSource and only to
it, a wake-up only when something changed."""

import types

from inspector.broker import channels
from inspector.firewall.lists import PORT_CHANGED, Feed, MacList, Merged, PortEvents

A, B = "52:54:00:00:00:01", "52:54:00:00:00:02"


def test_a_change_heard_after_a_snapshot_began_wins_over_it():
    merged: Merged[str] = Merged()
    assert merged.put("old", "heard before", at=1.0) is None
    assert merged.put("gone", "x", at=1.0) is None
    assert merged.put("gone", None, at=3.0) == "x"  # removed after the poll began
    assert merged.put("new", "heard after", at=3.0) is None
    merged.replace({"old": "polled", "gone": "polled", "kept": "polled"}, started=2.0)
    assert merged.values == {"old": "polled", "kept": "polled", "new": "heard after"}
    # A later snapshot is newer than every change heard: it is the truth.
    merged.replace({"kept": "polled"}, started=4.0)
    assert merged.values == {"kept": "polled"}


class Source:
    """A ListSource recording what it hears; says `changed` for each."""

    def __init__(self, changed: bool) -> None:
        self.changed = changed
        self.heard: list[str] = []

    def hear(self, event_type: str, payload: dict) -> bool:
        self.heard.append(event_type)
        return self.changed

    def allows_unknown(self) -> bool:
        return True


def fed(source) -> types.SimpleNamespace:
    wakes, answers = [], []
    return types.SimpleNamespace(
        whitelist=MacList("whitelist"),
        blacklist=MacList("blacklist"),
        source=source,
        wake=lambda: wakes.append(1),
        answer=answers.append,
        wakes=wakes,
        answers=answers,
    )


def test_ironic_notifications_go_to_the_source_alone():
    manager = fed(Source(changed=False))
    feed = Feed(manager)
    port = {"ironic_object.data": {"uuid": "p1", "node_uuid": "n1", "address": A}}
    for event_type in (*PORT_CHANGED, "baremetal.node.provision_set.end"):
        feed(event_type, port)
    assert manager.source.heard == [*PORT_CHANGED, "baremetal.node.provision_set.end"]
    assert manager.blacklist.macs() == set() and not manager.wakes  # the source's call
    manager.source.changed = True
    feed("baremetal.port.delete.end", port)
    assert manager.wakes == [1]


def test_announcements_and_status_requests_do_not_reach_the_source():
    manager = fed(Source(changed=True))
    feed = Feed(manager)
    feed(channels.INTROSPECTION_STARTED, {"node_uuid": "n1", "macs": [A]})
    feed(channels.PORT_ADDED, {"uuid": "p2", "address": B})
    feed(channels.STATUS_REQUEST, {"request_id": "r1"})
    assert manager.source.heard == []
    assert manager.whitelist.macs() == {A} and manager.blacklist.macs() == {B}
    assert manager.wakes == [1, 1] and manager.answers == ["r1"]


def test_the_default_source_keeps_the_blacklist_from_port_notifications_only():
    blacklist = MacList("blacklist")
    source = PortEvents(blacklist)
    port = {"ironic_object.data": {"uuid": "p1", "node_uuid": "n1", "address": A}}
    assert source.hear("baremetal.port.create.end", port)
    assert not source.hear("baremetal.node.provision_set.end", port)
    assert blacklist.macs() == {A} and source.allows_unknown()
    assert source.hear("baremetal.port.delete.end", port)
    assert blacklist.macs() == set()
