"""The tests' fakes have what the Protocols of the backends (the work queue, the DLM,
Ironic) name, with the same parameters. mypy checks the package's own implementations
(the real backends, the lazy Ironic) where they are used as the Protocols; it does not
read the tests."""

import inspect
import typing

import pytest

from inspector.broker import Delivery, Publisher, Queue
from inspector.coordination import DLM
from inspector.ironic import IronicClient
from tests.api_steps import RecordingQueue
from tests.fakes.dlm import FakeMember
from tests.fakes.ironic import FakeIronic


def members(protocol: type) -> dict[str, object]:
    """The protocol's own members (methods, properties, attributes), by name."""
    found: dict[str, object] = {}
    for klass in reversed(protocol.__mro__):
        if klass in (typing.Protocol, typing.Generic, object):
            continue
        found.update(dict.fromkeys(getattr(klass, "__annotations__", {}), None))
        found.update({name: value for name, value in vars(klass).items()})
    return {name: value for name, value in found.items() if not name.startswith("_")}


def parameters(function) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


def assigned_in_init(implementation: type, name: str) -> bool:
    return name in implementation.__init__.__code__.co_names


IMPLEMENTATIONS = [
    (IronicClient, FakeIronic),
    (DLM, FakeMember),
    (Publisher, RecordingQueue),
]


@pytest.mark.parametrize(
    ("protocol", "implementation"),
    IMPLEMENTATIONS,
    ids=[f"{i.__module__}.{i.__name__}" for _, i in IMPLEMENTATIONS],
)
def test_each_implementation_has_the_protocol(protocol, implementation):
    for name, declared in members(protocol).items():
        if callable(declared):
            method = getattr(implementation, name, None)
            assert callable(method), f"{implementation.__name__} has no {name}()"
            assert parameters(method) == parameters(declared), name
        else:  # an attribute or a property
            assert hasattr(implementation, name) or assigned_in_init(implementation, name), (
                f"{implementation.__name__} has no {name}"
            )


def test_the_protocols_are_not_empty():
    assert {"get_node", "create_port", "delete_port"} <= set(members(IronicClient))
    assert {"try_lock", "member_id", "members"} <= set(members(DLM))
    assert set(members(Queue)) == {"put", "get"}
    assert set(members(Delivery)) == {"request", "error", "ack", "retry", "dead_letter"}
