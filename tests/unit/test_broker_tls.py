"""TLS to RabbitMQ from [oslo_messaging_rabbit]: kombu's ssl options for the queue and the
messaging notification driver, oslo.messaging's for the firewall channel, and a real TLS
endpoint (tests.fakes.tls) that requires the client certificate."""

import ssl

import pytest

from inspector import conf as config
from inspector.broker import channels, transports
from inspector.broker.queue import WorkQueue
from inspector.broker.tls import DEFAULT_TLS, Tls
from inspector.errors import ConfigError, ServiceUnavailable
from inspector.notifications import messaging
from tests.fakes.tls import CLIENT_NAME, TlsTerminator, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def client_tls(pki, ca=None) -> Tls:
    return Tls(True, str(ca or pki.ca), str(pki.client_cert), str(pki.client_key))


def load(tmp_path, text: str):
    path = tmp_path / "inspector.conf"
    path.write_text(text)
    return config.load(["--config-file", str(path)])


# -- the options and their mapping -------------------------------------------------------


def test_oslo_messagings_names_and_defaults(tmp_path):
    assert Tls.from_conf(config.load([])) == DEFAULT_TLS == Tls(False, "", "", "")
    conf = load(
        tmp_path,
        "[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = /ca.pem\n"
        "ssl_cert_file = /c.pem\nssl_key_file = /c.key\n",
    )
    assert Tls.from_conf(conf) == Tls(True, "/ca.pem", "/c.pem", "/c.key")


def test_kombu_ssl_options(pki):
    tls = client_tls(pki)
    assert tls.kombu_ssl("amqp://u:p@rabbit.example.com:5671//") == {
        "cert_reqs": ssl.CERT_REQUIRED,
        "server_hostname": "rabbit.example.com",  # the certificate must name it
        "ca_certs": str(pki.ca),
        "certfile": str(pki.client_cert),
        "keyfile": str(pki.client_key),
    }
    # As written: kombu would check localhost's certificate against 127.0.0.1.
    assert tls.kombu_ssl("amqp://localhost//")["server_hostname"] == "localhost"
    # Failover URLs: the host of each attempt, which kombu writes into the dict it gets,
    # so each connection gets a new one.
    failover = "amqp://a:5671//;amqp://b:5671//"
    assert tls.kombu_ssl(failover)["server_hostname"] is None
    assert tls.kombu_ssl(failover) is not tls.kombu_ssl(failover)
    for url in ("redis://h:6379/0", "rediss://h:6379/0", "memory://"):
        assert tls.kombu_ssl(url) is None
    # Off: plain amqp, but amqps:// is TLS all the same, verified against the system's CAs.
    assert DEFAULT_TLS.kombu_ssl("amqp://h//") is None
    assert DEFAULT_TLS.kombu_ssl("amqps://h//") == {
        "cert_reqs": ssl.CERT_REQUIRED,
        "server_hostname": "h",
    }
    # The key in the certificate's file.
    assert Tls(True, "", str(pki.client_cert)).kombu_ssl("amqp://h//")["keyfile"] is None


def test_the_connections_get_them(pki):
    tls = client_tls(pki)
    transport = transports.select("amqp://h//")
    connection = transports.connect("amqp://h//", transport, {}, tls)
    assert connection.ssl["certfile"] == str(pki.client_cert)
    assert transports.connect("amqp://h//", transport, {}).ssl is False
    driver = messaging.MessagingDriver(
        "amqp://h//", exchange="e", topics=["t"], publisher_id="p", tls=tls
    )
    assert driver.tls is tls


def test_an_unreadable_file_stops_the_start_naming_the_option(pki, tmp_path):
    missing = Tls(True, str(tmp_path / "nope.pem"))
    with pytest.raises(ConfigError, match=r"\[oslo_messaging_rabbit\] ssl_ca_file: cannot read"):
        WorkQueue("amqp://h//", tls=missing)
    with pytest.raises(ConfigError, match="ssl_ca_file"):
        messaging.MessagingDriver(
            "amqp://h//", exchange="e", topics=[], publisher_id="p", tls=missing
        )
    with pytest.raises(ConfigError, match="ssl_key_file is set without ssl_cert_file"):
        Tls(True, "", "", str(pki.client_key)).kombu_ssl("amqp://h//")
    # Unused (TLS off, or not RabbitMQ): not checked.
    WorkQueue("redis://h:6379/0", tls=missing).close()
    WorkQueue("amqp://h//", tls=Tls(False, str(tmp_path / "nope.pem"))).close()


# -- against a TLS endpoint that requires the client certificate --------------------------


def test_the_queue_presents_the_client_certificate_and_checks_the_server(pki):
    with TlsTerminator(pki) as server:
        queue = WorkQueue(
            f"amqp://u:p@127.0.0.1:{server.port}//", max_retries=1, tls=client_tls(pki)
        )
        try:
            # The endpoint speaks no AMQP: the handshake is what is checked here.
            with pytest.raises(ServiceUnavailable):
                queue.depth()
        finally:
            queue.close()
    assert server.clients == [CLIENT_NAME]
    assert server.refused == []


def test_the_notifier_presents_the_client_certificate(pki):
    with TlsTerminator(pki) as server:
        driver = messaging.MessagingDriver(
            f"amqp://u:p@127.0.0.1:{server.port}//",
            exchange="e",
            topics=["t"],
            publisher_id="p",
            tls=client_tls(pki),
        )
        with pytest.raises(messaging.NotDelivered):
            driver.send({"id": "1", "event_type": "x"})
        driver.close()
    assert server.clients == [CLIENT_NAME]


@pytest.mark.parametrize(
    ("tls", "misnamed", "client_says", "server_says"),
    [
        # The server's certificate is not of the CA given: the client refuses it.
        ("other_ca", False, "certificate verify failed", "unknown ca"),
        # Of the CA, but for another address than the one connected to: the host name
        # is checked.
        ("ca", True, "IP address mismatch", "bad certificate"),
        # No client certificate: the server refuses.
        ("no_client_cert", False, "", "peer did not return a certificate"),
    ],
)
def test_what_tls_refuses(pki, tls, misnamed, client_says, server_says):
    options = {
        "other_ca": client_tls(pki, ca=pki.other_ca),
        "ca": client_tls(pki),
        "no_client_cert": Tls(True, str(pki.ca)),
    }[tls]
    with TlsTerminator(pki, misnamed=misnamed) as server:
        url = f"amqp://u:p@127.0.0.1:{server.port}//"
        connection = transports.connect(url, transports.select(url), {}, options)
        with pytest.raises((ssl.SSLError, OSError, ConnectionError)) as caught:
            connection.ensure_connection(max_retries=0, reraise_as_library_errors=False)
            # TLS 1.3: the server's refusal of the client arrives with the first read.
            connection.default_channel  # noqa: B018 - reads from the server
        connection.release()
    assert client_says in str(caught.value)
    assert server.clients == []
    if server_says:
        assert any(server_says in reason for reason in server.refused), server.refused


# -- the firewall channel (oslo.messaging) ----------------------------------------------

#: Importing oslo.messaging warns of the deprecation of its eventlet helpers (oslo.utils,
#: oslo.service), nothing of ours.
OSLO_MESSAGING_IMPORT = "ignore::DeprecationWarning"


def _rabbit_conf(channel: channels.MessagingChannel):
    return channel._ours.conf.oslo_messaging_rabbit


@pytest.mark.filterwarnings(OSLO_MESSAGING_IMPORT)
def test_the_channel_gets_the_same_options_from_a_config_dir(tmp_path, pki):
    confd = tmp_path / "inspector.conf.d"
    confd.mkdir()
    (confd / "tls.conf").write_text(
        f"[oslo_messaging_rabbit]\nssl = true\nssl_ca_file = {pki.ca}\n"
        f"ssl_cert_file = {pki.client_cert}\nssl_key_file = {pki.client_key}\n"
    )
    main = tmp_path / "inspector.conf"
    main.write_text("[queue]\ntransport_url = amqp://u:p@127.0.0.1:1//\n")
    conf = config.load(["--config-file", str(main), "--config-dir", str(confd)])
    channel = channels.from_conf(conf, host="h")
    assert isinstance(channel, channels.MessagingChannel)
    rabbit = _rabbit_conf(channel)
    assert (rabbit.ssl, rabbit.ssl_ca_file, rabbit.ssl_cert_file, rabbit.ssl_key_file) == (
        True,
        str(pki.ca),
        str(pki.client_cert),
        str(pki.client_key),
    )
    assert rabbit.amqp_auto_delete is True
    channel.stop()


@pytest.mark.filterwarnings(OSLO_MESSAGING_IMPORT)
def test_an_amqps_queue_gives_a_tls_channel_on_rabbitmqs_tls_port(conf):
    conf.set_override("transport_url", "amqps://u:p@rabbit.example.com//", group="queue")
    assert channels.channel_url(conf) == "rabbit://u:p@rabbit.example.com:5671//"
    channel = channels.from_conf(conf, host="h")
    assert isinstance(channel, channels.MessagingChannel)
    assert _rabbit_conf(channel).ssl is True
    channel.stop()
    conf.set_override("transport_url", "amqps://u:p@rabbit.example.com:5999//", group="queue")
    assert channels.channel_url(conf) == "rabbit://u:p@rabbit.example.com:5999//"
    # An explicit channel URL keeps the options as they are.
    conf.set_override("channel_url", "rabbit://u:p@other//", group="firewall")
    channel = channels.from_conf(conf, host="h")
    assert _rabbit_conf(channel).ssl is False
    channel.stop()
