"""The request deadline ([api] request_timeout), bound around the application from the
moment a request's headers are read: every backend call made for the request sees it
(inspector.deadlines), and none starts after it."""

import time
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from inspector import deadlines


class Bounded:
    """WSGI middleware: `app` serves each request under a deadline `seconds` away."""

    #: The clock the deadlines are on (a test's own in tests).
    clock = staticmethod(time.monotonic)

    def __init__(self, app: WSGIApplication, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        with deadlines.bound(self.seconds, self.clock):
            return self.app(environ, start_response)
