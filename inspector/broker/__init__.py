"""Messaging: the at-least-once work queue (kombu) and the request format it carries.

`Publisher` and `Queue` are what the rest of the service may use of the work queue:
`queue.WorkQueue` implements both, the tests' recording queues `Publisher`; each
delivery `Queue.get` returns is a `Delivery`.
"""

from typing import Protocol

from inspector.broker.message import Request


class Delivery(Protocol):
    """One request taken from the queue, settled once by the thread that took it."""

    @property
    def request(self) -> Request | None: ...
    @property
    def error(self) -> str | None: ...

    def ack(self) -> None: ...
    def retry(self, delay: float, *, renewed: bool = False) -> None: ...
    def dead_letter(self, reason: str) -> None: ...


class Publisher(Protocol):
    def put(self, request: Request) -> None: ...


class Queue(Publisher, Protocol):
    def get(self, timeout: float, *, starts: bool = True) -> Delivery | None: ...
