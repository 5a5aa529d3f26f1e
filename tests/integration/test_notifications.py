"""Notifications survive a receiver that is down and a worker restart: every one arrives
once the receiver is back (at-least-once, each with its stable id)."""

import contextlib
import http.server
import json
import threading
import uuid

import kombu
import pytest

from inspector.notifications import messaging
from tests.integration.cluster import (
    free_port,
    ipa_payload,
    macs,
    post_continue,
    running_deployment,
    start,
    wait_for,
    wait_state,
)

pytestmark = pytest.mark.integration


class Receiver:
    """An HTTP endpoint on a fixed port that the test turns on late."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[dict] = []
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_notifications_arrive_after_an_outage_and_a_worker_restart(
    tmp_path, postgresql_admin, rabbitmq_server, redis_server, ironic_url, ironic_api
):
    port = free_port()
    with running_deployment(
        tmp_path,
        postgresql_admin,
        queue_url=rabbitmq_server,
        redis_url=redis_server,
        ironic_url=ironic_url,
        options={
            "notifications": {
                "drivers": ["http"],
                "http_endpoint": f"http://127.0.0.1:{port}/hook",
                "poll_interval": 0.1,
                "max_backoff": 1.0,
            }
        },
    ) as cluster:
        node = ironic_api.enroll()["uuid"]
        start(cluster, node)
        assert post_continue(cluster, ipa_payload(macs(ironic_api, node))).status_code == 200
        wait_state(cluster, node, "finished")
        wait_for(
            lambda: "not delivered" in cluster.workers[0].log_text(),
            30,
            message="a failed delivery attempt",
        )
        # The worker restarts while the notifications wait in the outbox.
        assert cluster.workers[0].stop() == 0
        cluster.start_worker()
        with Receiver(port) as receiver:
            wait_for(
                lambda: (
                    {n["event_type"] for n in receiver.received}
                    >= {"inspector.introspection.start", "inspector.introspection.finish"}
                ),
                30,
                message=lambda: f"notifications received: {receiver.received}",
            )
        ids = {n["id"] for n in receiver.received}
        assert len(ids) == 2, receiver.received
        finish = next(n for n in receiver.received if n["event_type"].endswith("finish"))
        assert finish["node_uuid"] == node and finish["state"] == "finished"
        assert finish["duration_seconds"] is not None


def test_messaging_driver_publishes_the_oslo_envelope_or_keeps_the_notification(
    rabbitmq_server,
):
    """On RabbitMQ: a notification nobody can receive (no queue bound) is refused, so the
    outbox keeps it; once a consumer's queue is bound it arrives as oslo.messaging's
    messagingv2 would send it."""
    exchange_name = f"test-notify-{uuid.uuid4().hex[:8]}"
    payload = {"id": "n-1", "event_type": "inspector.introspection.finish", "node_uuid": "x"}
    driver = messaging.MessagingDriver(
        rabbitmq_server, exchange=exchange_name, topics=["notifications"], publisher_id="t"
    )
    with pytest.raises(messaging.NotDelivered, match=r"NOT_FOUND|not published"):
        driver.send(payload)  # the exchange does not exist yet
    with kombu.Connection(rabbitmq_server) as connection, contextlib.closing(driver):
        channel = connection.channel()
        exchange = kombu.Exchange(exchange_name, "topic", durable=False)(channel)
        exchange.declare()
        try:
            with pytest.raises(messaging.NotDelivered, match="no queue is bound"):
                driver.send(payload)
            queue = kombu.Queue(
                f"{exchange_name}.info", exchange=exchange, routing_key="notifications.info"
            )(channel)
            queue.declare()
            driver.send(payload)
            message = queue.get(no_ack=True)
            assert message is not None
            assert message.payload["oslo.version"] == "2.0"
            inner = json.loads(message.payload["oslo.message"])
            assert inner["event_type"] == "inspector.introspection.finish"
            assert inner["priority"] == "INFO" and inner["payload"] == payload
            queue.delete()
        finally:
            exchange.delete()
