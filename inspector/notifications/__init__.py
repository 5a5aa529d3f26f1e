"""Notifications of introspections: the outbox sender (a leader-elected singleton) and
its drivers (HTTP, log; oslo.messaging lives in inspector.broker.notifier)."""
