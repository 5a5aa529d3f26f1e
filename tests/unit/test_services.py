"""inspector.services.build_services: the one builder of a process's store, work queue
and Ironic client (api, worker, all, and the WSGI entry point), whose retries give up
when the process shuts down."""

import time

import pytest

from inspector import services
from inspector.api.context import EXTENSION
from inspector.api.wsgi import LazyApplication
from inspector.broker.message import Request
from inspector.errors import ServiceUnavailable
from inspector.lifecycle import Lifecycle

#: Where nothing listens: each attempt is refused at once.
NOWHERE = "127.0.0.1:1"
#: Seconds the retries of these tests would take without the shutdown flag.
RETRIES, INTERVAL = 5, 20.0


def unreachable(conf):
    """Queue and Ironic nowhere, retried for RETRIES x INTERVAL = 100 s."""
    conf.set_override("transport_url", f"amqp://guest:guest@{NOWHERE}//", group="queue")
    conf.set_override("max_retries", RETRIES, group="queue")
    conf.set_override("retry_interval", INTERVAL, group="queue")
    conf.set_override("auth_type", "none", group="ironic")
    conf.set_override("endpoint_override", f"http://{NOWHERE}", group="ironic")
    conf.set_override("max_retries", RETRIES, group="ironic")
    conf.set_override("retry_interval", INTERVAL, group="ironic")
    return conf


def gives_up_at_once(call) -> str:
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable) as raised:
        call()
    assert time.monotonic() - started < INTERVAL / 2, "waited for a retry"
    return raised.value.message


def test_the_backends_give_up_when_the_process_stops(conf):
    lifecycle = Lifecycle()
    backends = services.build_services(unreachable(conf), lifecycle)
    try:
        lifecycle.stop("test")
        gives_up_at_once(lambda: backends.queue.put(Request(node_uuid="n1", event="inspect")))
        message = gives_up_at_once(lambda: backends.ironic.set_power_state("n1", "power on"))
        assert "on shutdown" in message
    finally:
        backends.close()


def test_the_wsgi_application_is_built_on_them(tmp_path, conf):
    config = tmp_path / "inspector.conf"
    config.write_text(
        f"[DEFAULT]\nauth_strategy = noauth\nstate_path = {tmp_path}\n"
        f"[queue]\ntransport_url = amqp://guest:guest@{NOWHERE}//\n"
        f"max_retries = {RETRIES}\nretry_interval = {INTERVAL}\n"
    )
    application = LazyApplication({"INSPECTOR_CONFIG_FILES": str(config)})
    queue = application._build().extensions[EXTENSION].queue
    application.lifecycle.stop("the server stops")
    gives_up_at_once(lambda: queue.put(Request(node_uuid="n1", event="inspect")))
