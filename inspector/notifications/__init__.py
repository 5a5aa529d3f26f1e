"""Notifications of introspections: the outbox sender (a leader-elected singleton) and
its drivers (HTTP, log, and messaging: RabbitMQ, published by inspector.broker.publisher)."""
