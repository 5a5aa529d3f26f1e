"""LazyIronic: a process without [ironic] options starts; each call then fails with 503
naming what to set. With them, every call goes to the one client, built once."""

import pytest

from inspector.errors import ServiceUnavailable
from inspector.ironic.lazy import LazyIronic


def test_unconfigured_calls_fail_naming_the_options(conf):
    ironic = LazyIronic(conf)  # nothing is built yet: this never fails
    problem = ironic.check()
    assert problem.startswith("Ironic is not configured: [ironic]")
    with pytest.raises(ServiceUnavailable, match="Ironic is not configured") as raised:
        ironic.get_node("node-1")
    assert raised.value.message == problem


def test_configured_calls_reach_the_one_client(conf):
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", "http://127.0.0.1:1", group="ironic")
    conf.set_override("max_retries", 0, group="ironic")
    ironic = LazyIronic(conf)
    assert ironic.check() is None
    client = ironic.client()
    assert ironic.client() is client
    # Nothing listens there: the real client's own failure, after its one attempt.
    with pytest.raises(ServiceUnavailable, match="cannot set the power of node n1"):
        ironic.set_power_state("n1", "power on")
    assert client.calls == 1
