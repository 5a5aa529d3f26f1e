"""wiring.start_firewall: which sources feed the PXE firewall. With the noop driver no
poll does (nothing would use them: no listing of every Ironic port each period); the
channel still brings status requests."""

import types

import pytest

from inspector.cmd import wiring


class Firewall:
    def __init__(self, driver: str) -> None:
        self.driver = types.SimpleNamespace(name=driver)
        self.whitelist, self.blacklist = "whitelist", "blacklist"
        self.watched: list[tuple[str, str]] = []
        self.listened = []
        self.started = False

    def watch(self, target, source, period, *, outages, service) -> None:
        self.watched.append((target, service))

    def listen(self, channel) -> None:
        self.listened.append(channel)

    def start(self) -> None:
        self.started = True


class Election:
    started = False

    def start(self) -> None:
        self.started = True


@pytest.mark.parametrize(
    ("driver", "watched", "listened"),
    [
        ("nftables", [("whitelist", "database"), ("blacklist", "Ironic")], ["channel"]),
        ("noop", [], ["channel"]),
    ],
)
def test_sources_by_driver(conf, driver, watched, listened):
    firewall, election = Firewall(driver), Election()
    wiring.start_firewall(
        conf, firewall, election, db=object(), ironic=object(), channel="channel", budget=None
    )
    assert firewall.watched == watched
    assert firewall.listened == listened
    assert firewall.started and election.started
