"""TLS to the real RabbitMQ: a TLS-terminating proxy (tests.fakes.tls) that requires the
client certificate sits in front of the test broker, and the work queue, the messaging
notification driver and the firewall channel (oslo.messaging) work through it with
[oslo_messaging_rabbit] ssl, ssl_ca_file, ssl_cert_file and ssl_key_file."""

import contextlib
import json
import threading
import urllib.parse
import uuid

import kombu
import pytest

from inspector import conf as config
from inspector.broker import channels
from inspector.broker.message import Request
from inspector.broker.queue import WorkQueue
from inspector.broker.tls import Tls
from inspector.notifications import messaging
from tests.fakes.tls import CLIENT_NAME, TlsTerminator, make_pki

pytestmark = pytest.mark.integration

#: Seconds a message may take through the proxy and the broker.
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def proxy(pki, rabbitmq_server):
    """TLS on a port of 127.0.0.1 in front of the test RabbitMQ; its URL through it."""
    broker = urllib.parse.urlsplit(rabbitmq_server)
    with TlsTerminator(pki, upstream=(broker.hostname, broker.port)) as terminator:
        netloc = f"{broker.username}:{broker.password}@127.0.0.1:{terminator.port}"
        yield terminator, urllib.parse.urlunsplit(broker._replace(netloc=netloc))


def tls_of(pki) -> Tls:
    return Tls(True, str(pki.ca), str(pki.client_cert), str(pki.client_key))


def test_the_work_queue_over_tls(proxy, pki, queue_name, rabbitmq_url):
    terminator, url = proxy
    queue = WorkQueue(url, queue_name, max_retries=1, tls=tls_of(pki))
    try:
        queue.put(Request(node_uuid="node-1", event="inspect"))
        delivery = queue.get(TIMEOUT)
        assert delivery is not None and delivery.request.node_uuid == "node-1"
        delivery.ack()
    finally:
        queue.close()
    assert CLIENT_NAME in terminator.clients
    assert terminator.refused == []


def test_the_messaging_driver_over_tls(proxy, pki, rabbitmq_server):
    terminator, url = proxy
    exchange_name = f"test-notify-{uuid.uuid4().hex[:8]}"
    driver = messaging.MessagingDriver(
        url, exchange=exchange_name, topics=["notifications"], publisher_id="t", tls=tls_of(pki)
    )
    with kombu.Connection(rabbitmq_server) as connection, contextlib.closing(driver):
        channel = connection.channel()
        exchange = kombu.Exchange(exchange_name, "topic", durable=False)(channel)
        exchange.declare()
        queue = kombu.Queue(
            f"{exchange_name}.info", exchange=exchange, routing_key="notifications.info"
        )(channel)
        try:
            queue.declare()
            driver.send({"id": "n-1", "event_type": "inspector.introspection.finish"})
            message = queue.get(no_ack=True)
            assert message is not None
            assert json.loads(message.payload["oslo.message"])["payload"]["id"] == "n-1"
        finally:
            queue.delete()
            exchange.delete()
    assert CLIENT_NAME in terminator.clients


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # oslo.messaging's imports
def test_the_firewall_channel_over_tls(proxy, pki, tmp_path):
    """oslo.messaging itself, with the options as our configuration has them: here from a
    configuration directory, which oslo.messaging's own configuration does not read."""
    terminator, url = proxy
    path = tmp_path / "inspector.conf"
    path.write_text(f"[queue]\ntransport_url = {url}\n")
    confd = tmp_path / "inspector.conf.d"
    confd.mkdir()
    (confd / "tls.conf").write_text(
        f"[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = {pki.ca}\n"
        f"ssl_cert_file = {pki.client_cert}\nssl_key_file = {pki.client_key}\n"
    )
    conf = config.load(["--config-file", str(path), "--config-dir", str(confd)])
    conf.set_override("channel_topic", f"test_firewall_{uuid.uuid4().hex[:8]}", group="firewall")
    channel = channels.from_conf(conf, host="tls-test")
    assert isinstance(channel, channels.MessagingChannel)
    heard: list[tuple[str, dict]] = []
    arrived = threading.Event()

    def handler(event_type: str, payload: dict) -> None:
        heard.append((event_type, payload))
        arrived.set()

    channel.subscribe(handler)
    channel.start()
    try:
        assert channel.ready(TIMEOUT), "the channel's listeners did not start"
        channel.publish(channels.INTROSPECTION_ENDED, {"node_uuid": "node-1"})
        assert arrived.wait(TIMEOUT), "the announcement did not come back"
    finally:
        channel.stop()
    assert (channels.INTROSPECTION_ENDED, {"node_uuid": "node-1"}) in heard
    assert CLIENT_NAME in terminator.clients
    assert terminator.refused == []
