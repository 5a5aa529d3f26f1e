"""Messaging: the at-least-once work queue (kombu) and the request format it carries."""
